import { chromium } from '@playwright/test';
const b = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--disable-gpu'] });
const ctx = await b.newContext({ serviceWorkers: process.env.SW === 'block' ? 'block' : 'allow' });
const p = await ctx.newPage();
p.on('console', m => console.log('console', m.type(), m.text().slice(0, 300)));
p.on('response', r => { if (r.url().includes('/api/')) console.log('resp', r.status(), r.url()); });
if (!process.env.DIRECT) { await p.goto('http://127.0.0.1:3701/'); await p.waitForTimeout(1500); }
await p.goto('http://127.0.0.1:3701/sessions/diag-s2');
console.log('ssr outcomes', await p.locator('.outcome').count());
await p.waitForTimeout(3000);
console.log('interactive', await p.evaluate(() => document.documentElement.dataset.interactive), 'controlled', await p.evaluate(() => !!navigator.serviceWorker.controller));
console.log('outcomes', await p.locator('.outcome').count(), (await p.locator('main').innerText()).slice(0, 120));
await b.close();
