// Registers the service worker (public/sw.js) for the whole site. Without it the dashboard works the same;
// only the offline page is missing.
if ('serviceWorker' in navigator) {
  navigator.serviceWorker.register('/sw.js', { scope: '/' }).catch(() => {});
}
