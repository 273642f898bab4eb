// embed.html#<share link> is index.html?embed=1#<share link>: one page, two layouts.
location.replace(`index.html?embed=1${location.hash}`);
