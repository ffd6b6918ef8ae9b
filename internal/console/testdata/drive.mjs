// drive.mjs drives the console page in headless Chromium with Playwright,
// as a person would, for the Go test TestConsole_InChromium. It waits on
// the DOM only. Input: one JSON argument {url, functionKey, tenantKey,
// adminKey, tenants, chromium, flags, shots, bigItems, timeoutMs}. Output:
// one JSON line on stdout with what the page showed.
import { chromium } from 'playwright-core';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

const cfg = JSON.parse(process.argv[2]);
const page0 = `${cfg.url}/api/v1/console/?code=${encodeURIComponent(cfg.functionKey)}`;
const out = { console: [], csp: [] };
const browser = await chromium.launch({ executablePath: cfg.chromium, args: cfg.flags, headless: true });

async function open(key) {
  const ctx = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 1000 } });
  ctx.setDefaultTimeout(cfg.timeoutMs);
  const page = await ctx.newPage();
  page.on('console', (m) => { if (m.type() === 'error') out.console.push(m.text()); });
  page.on('pageerror', (e) => out.console.push('pageerror: ' + e.message));
  // Anything the page asks of another origin fails the test.
  page.on('request', (r) => { if (!r.url().startsWith(cfg.url) && !r.url().startsWith('blob:') && !r.url().startsWith('data:')) out.csp.push(r.url()); });
  const res = await page.goto(page0);
  out.policy = res.headers()['content-security-policy'];
  await page.fill('#key', key);
  await page.click('#signin-btn');
  await page.waitForSelector('body[data-ready="true"]');
  return { ctx, page };
}
const t0 = Date.now();
const step = (what) => process.stderr.write(`${((Date.now() - t0) / 1000).toFixed(1)}s ${what}\n`);
let current;
const shot = (page, name) => page.screenshot({ path: path.join(cfg.shots, name), fullPage: true });

try {
  // The tenant: submit a small job, watch it to harvested, download its
  // results; submit a large one and cancel it while it runs.
  const { ctx, page } = await open(cfg.tenantKey);
  current = page;
  step('signed in as the tenant');
  out.tenantView = await page.isVisible('#tenant');
  // Its documents: the dead-lettered one is listed, as it stands.
  await page.waitForSelector(`#docs tr[data-document="${cfg.deadDocument}"]`);
  out.tenantDocs = await page.$$eval('#docs tr[data-document]', (rs) => rs.map((r) => ({ name: r.dataset.document, state: r.dataset.state, text: r.textContent })));
  await page.fill('#items', 'The printer on floor 3 jams on every job.\nThe VPN drops at noon.\nPasswords expire too often.');
  await page.click('#submit-btn');
  const job1 = await (await page.waitForSelector('#submit-result[data-job]')).getAttribute('data-job');
  const row1 = `#jobs tr[data-job="${job1}"]`;
  await page.waitForSelector(row1);
  out.job1States = [await page.getAttribute(row1, 'data-state')];
  await page.waitForSelector(`${row1}[data-state="harvested"]`);
  step('job 1 harvested');
  out.job1States.push('harvested');
  out.job1Counts = await page.textContent(`${row1} td.counts`);
  out.job1Progress = await page.$eval(`${row1} progress`, (p) => [p.value, p.max]);
  out.job1Outcomes = await page.textContent(`${row1} td.outcomes`);
  await shot(page, 'tenant-harvested.png');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click(`${row1} button.results`)]);
  out.resultsFile = download.suggestedFilename();
  out.results = (await readFile(await download.path(), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));

  // Ten thousand lines, typed in at once (fill would echo them all in its errors).
  await page.$eval('#items', (ta, n) => { ta.value = Array.from({ length: n }, (_, i) => `Ticket ${i}: the coffee machine is out of order again.`).join('\n'); }, cfg.bigItems);
  await page.click('#submit-btn');
  await page.waitForSelector(`#submit-result[data-job]:not([data-job="${job1}"])`);
  const job2 = await page.getAttribute('#submit-result', 'data-job');
  const row2 = `#jobs tr[data-job="${job2}"]`;
  await page.waitForSelector(`${row2} button.cancel`);
  out.job2Before = await page.getAttribute(row2, 'data-state');
  await shot(page, 'tenant-running.png');
  step('job 2 cancel clicked');
  await page.click(`${row2} button.cancel`);
  await page.waitForSelector(`${row2}[data-state="harvested"][data-final="cancelled"]`);
  step('job 2 harvested');
  out.job2Outcomes = await page.textContent(`${row2} td.outcomes`);
  await page.waitForSelector('#daily-total[data-total-tokens]');
  out.tenantDailyTotal = Number(await page.getAttribute('#daily-total', 'data-total-tokens'));
  await shot(page, 'tenant.png');
  out.jobs = [job1, job2];
  await ctx.close();

  // The operator: every tenant's spend chart, the alerts raised.
  const op = await open(cfg.adminKey);
  current = op.page;
  step('signed in as the operator');
  out.operatorView = await op.page.isVisible('#operator');
  out.totals = {};
  for (const t of cfg.tenants) {
    const sel = `#tenants-spend section[data-tenant="${t}"] .total[data-total-tokens]`;
    await op.page.waitForSelector(sel);
    out.totals[t] = Number(await op.page.getAttribute(sel, 'data-total-tokens'));
    out.bars = (out.bars || 0) + await op.page.$$eval(`#tenants-spend section[data-tenant="${t}"] svg rect[data-value]`, (rs) => rs.length);
  }
  await op.page.waitForSelector(`#alerts li[data-alert="${cfg.alert}"]`);
  out.alerts = await op.page.$$eval('#alerts li', (ls) => ls.map((l) => ({ name: l.dataset.alert, text: l.textContent })));
  await op.page.waitForSelector(`#findings tr[data-finding]`);
  out.findings = await op.page.$$eval('#findings tr[data-finding]', (rs) => rs.map((r) => r.dataset.finding));
  // A dead-lettered document is listed; its button reprocesses it, and it
  // leaves the list.
  const deadRow = `#dead tr[data-document="${cfg.deadDocument}"]`;
  await op.page.waitForSelector(deadRow);
  out.deadShown = await op.page.$$eval('#dead tr[data-document]', (rs) => rs.map((r) => ({ name: r.dataset.document, text: r.textContent })));
  await shot(op.page, 'operator.png');
  await op.page.click(`${deadRow} button.reprocess`);
  step('reprocess clicked');
  await op.page.waitForSelector(deadRow, { state: 'detached' });
  out.deadAfter = await op.page.$$eval('#dead tr[data-document]', (rs) => rs.map((r) => r.dataset.document));
  out.deadEmptyShown = await op.page.isVisible('#dead-empty');
  await shot(op.page, 'operator-reprocessed.png');
} catch (e) {
  if (current) await shot(current, 'failure.png').catch(() => {});
  throw e;
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out) + '\n');
