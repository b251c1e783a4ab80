// The dashboard's service worker (docs/operations.md "Installing the dashboard").
//
// It keeps only the offline page and what that page shows: its stylesheet, the icons, the manifest. It never
// stores a page, an API answer or a live stream, so it can never show an outcome that is not current; and it
// never stores the app's script or wasm (/pkg/), so it can never hand out a stale or mismatched pair: the
// browser's HTTP cache keeps those, under content-hashed names (outcomes.<hash>.js, outcomes_bg.<hash>.wasm,
// outcomes.<hash>.css, sent `immutable`) that every build changes and the page (never cached) names.
// This script and /sw-register.js keep their names and are sent `no-store`, so a new worker is found at once.
//
// - A navigation goes to the network. Only when it fails is the answer a page of the worker's: when this device
//   is offline (navigator.onLine is false), the offline page; when it is online and only the server did not
//   answer, the "server cannot be reached" page. Both say that nothing can be shown and no outcome is current.
// - The shell files above: network first (refreshing the cache), the cache only when the network fails.
// - Anything else (/api/, /pkg/, live streams, forms): not touched, the browser fetches it as without a worker.
const CACHE = 'outcomes-shell-v2';
const SHELL = [
  '/offline.html',
  '/unreachable.html',
  '/offline.css',
  '/manifest.webmanifest',
  '/icon.svg',
  '/icon-192.png',
  '/icon-512.png',
  '/icon-maskable-512.png',
  '/apple-touch-icon.png',
];

self.addEventListener('install', (event) => {
  event.waitUntil(
    caches
      .open(CACHE)
      .then((cache) => cache.addAll(SHELL.map((path) => new Request(path, { cache: 'no-store' }))))
      .then(() => self.skipWaiting()),
  );
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    caches
      .keys()
      .then((keys) => Promise.all(keys.filter((key) => key !== CACHE).map((key) => caches.delete(key))))
      .then(() => self.clients.claim()),
  );
});

// The answer to a navigation the network could not carry: "this device is offline" only when it is, else
// "the server cannot be reached" (the device is online; the server is stopped or unreachable).
async function offline() {
  const deviceOffline = self.navigator.onLine === false;
  const page = await caches.match(deviceOffline ? '/offline.html' : '/unreachable.html');
  const words = deviceOffline
    ? 'You are offline: nothing can be shown, and no outcome is current.'
    : 'The server cannot be reached: nothing can be shown, and no outcome is current.';
  return (
    page ??
    new Response(words, {
      status: 503,
      headers: { 'content-type': 'text/plain; charset=utf-8' },
    })
  );
}

async function shellFile(request) {
  try {
    const response = await fetch(request);
    if (response.ok) {
      const copy = response.clone();
      caches.open(CACHE).then((cache) => cache.put(request, copy));
    }
    return response;
  } catch (error) {
    const cached = await caches.match(request);
    if (cached) return cached;
    throw error;
  }
}

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET') return;
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  if (request.mode === 'navigate') {
    // Never cached: a page holds outcomes as they are now.
    event.respondWith(fetch(request).catch(offline));
    return;
  }
  if (SHELL.includes(url.pathname) && url.search === '') {
    event.respondWith(shellFile(request));
  }
});
