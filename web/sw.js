// Offline support: network first (so a deployed update is used at once), the cache when offline.
const CACHE = 'poseidon-v30';
const CORE = ['./', 'index.html', 'embed.html', 'embed.js', 'style.css', 'boot.js', 'main.js', 'worker.js', 'dom.js', 'share.js',
  'hf.js', 'exports.js', 'profile.js', 'calibration.js', 'state.js', 'store.js', 'engine.js', 'fields.js', 'forms.js', 'profile-ui.js',
  'calibration-ui.js', 'record-run.js', 'errors.js', 'words.js', 'results.js', 'phone-bar.js', 'phone-tabs.js', 'summary-pin.js', 'planner.js', 'links.js', 'export-ui.js', 'explain.js', 'cost.js',
  'cost-ui.js', 'glossary.js', 'megatron.js', 'megatron-layout.js', 'megatron-moe.js', 'stock.js', 'pool.js', 'split-search.js', 'whatif.js', 'whatif-ui.js', 'compare.js', 'compare-ui.js', 'scenario-file.js', 'json-text.js', 'context.js', 'plan-choices.js', 'scroll-hint.js',
  'render/colors.js', 'render/stages.js', 'render/tables.js', 'render/timeline.js', 'render/exchanges.js', 'render/memory.js', 'render/explain.js',
  'render/zoom.js', 'render/marks.js', 'render/scene.js', 'render/scaling.js', 'render/compare.js',
  'poseidon.js', 'poseidon.wasm', 'icon.svg', 'manifest.webmanifest'];

self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(CACHE).then((c) => c.addAll(CORE)).then(() => self.skipWaiting()).catch(() => {}));
});

self.addEventListener('activate', (event) => {
  event.waitUntil(caches.keys().then((keys) => Promise.all(keys.filter((k) => k !== CACHE).map((k) => caches.delete(k))))
    .then(() => self.clients.claim()));
});

self.addEventListener('fetch', (event) => {
  const req = event.request;
  if (req.method !== 'GET' || new URL(req.url).origin !== self.location.origin) return;
  event.respondWith(fetch(req).then((res) => {
    if (res.ok) {
      const copy = res.clone();
      caches.open(CACHE).then((c) => c.put(req, copy)).catch(() => {});
    }
    return res;
  }).catch(() => caches.match(req, { ignoreSearch: true }).then((hit) => hit || Response.error())));
});
