// Starts the planner engine (worker.js: the module fetched and compiled) as soon as this small
// script has loaded, while the page's other modules still load: the first plan waits on the
// engine first (issue 36 item 11). main.js takes the same worker (engine.js's startEngine).
import { loadFirstView, startEngine } from './engine.js';

startEngine().catch(() => {}); // main.js reports a failure to load
loadFirstView(); // the default inputs' result made at build time, shown before the engine is ready
