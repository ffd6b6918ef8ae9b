// The official Node openai package against offpath's OpenAI-compatible
// door, with both of its clients: OpenAI on the v1 surface and AzureOpenAI
// on the classic one. Run by TestNodeOpenAI with DOOR_URL, DOOR_FUNCTION_KEY,
// DOOR_KEY (contoso) and DOOR_OTHER_KEY (fabrikam); it prints one JSON
// summary line and exits non-zero on the first failed check.
import assert from 'node:assert/strict';
import OpenAI, { AzureOpenAI, toFile } from 'openai';

const env = (k) => {
  const v = process.env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const url = env('DOOR_URL');
const headers = { 'x-functions-key': env('DOOR_FUNCTION_KEY') };
const v1 = new OpenAI({ baseURL: `${url}/api/openai/v1`, apiKey: env('DOOR_KEY'), defaultHeaders: headers });
const classic = (key) => new AzureOpenAI({ endpoint: `${url}/api`, apiKey: key, apiVersion: '2025-04-01-preview', defaultHeaders: headers });
const azure = classic(env('DOOR_KEY'));
const other = classic(env('DOOR_OTHER_KEY'));

const line = (id, model, prompt) => JSON.stringify({
  custom_id: id, method: 'POST', url: '/v1/chat/completions',
  body: { model, max_tokens: 16, messages: [{ role: 'system', content: 'Summarise.' }, { role: 'user', content: prompt }] },
});
const file = (prefix, n, edit = (i, l) => l) =>
  Array.from({ length: n }, (_, i) => edit(i, line(`${prefix}-${String(i).padStart(4, '0')}`, 'summarize', `Ticket ${i}: the printer is on fire.`))).join('\n') + '\n';
const upload = async (client, name, text) => client.files.create({ file: await toFile(Buffer.from(text), name), purpose: 'batch' });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function finish(client, id) {
  for (const deadline = Date.now() + 90_000; Date.now() < deadline; await sleep(50)) {
    const b = await client.batches.retrieve(id);
    if (['completed', 'failed', 'expired', 'cancelled'].includes(b.status)) return b;
  }
  throw new Error(`batch ${id} did not end`);
}

async function lines(client, id) {
  const res = await client.files.content(id);
  return (await res.text()).split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l));
}

async function refused(promise) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof OpenAI.APIError, `not an APIError: ${e}`);
    return e;
  }
  assert.fail('the call succeeded');
}

// 1,000 requests through the OpenAI client.
const f = await upload(v1, 'tickets.jsonl', file('n', 1000));
assert.equal(f.status, 'processed');
assert.equal(f.purpose, 'batch');
let b = await v1.batches.create({ input_file_id: f.id, endpoint: '/v1/chat/completions', completion_window: '24h', metadata: { run: 'node' } });
assert.equal(b.request_counts.total, 1000);
b = await finish(v1, b.id);
assert.equal(b.status, 'completed');
assert.deepEqual([b.request_counts.completed, b.request_counts.failed], [1000, 0]);
assert.equal(b.metadata.run, 'node');
const out = await lines(v1, b.output_file_id);
const ids = new Set();
let prompt = 0, completion = 0;
for (const l of out) {
  assert.equal(l.response.status_code, 200);
  assert.match(l.custom_id, /^n-\d{4}$/);
  assert.ok(!ids.has(l.custom_id), `duplicate ${l.custom_id}`);
  ids.add(l.custom_id);
  const u = l.response.body.usage;
  assert.ok(u.prompt_tokens > 0 && u.completion_tokens > 0 && u.total_tokens === u.prompt_tokens + u.completion_tokens);
  prompt += u.prompt_tokens;
  completion += u.completion_tokens;
}
assert.equal(ids.size, 1000);
assert.equal((await lines(v1, b.error_file_id)).length, 0);

// Refusals at upload, with Azure's codes and the line.
let e = await refused(upload(v1, 'bad.jsonl', file('m', 4, (i, l) => (i === 2 ? line('m-x', 'gpt-4o', 'x') : l))));
assert.deepEqual([e.status, e.code], [400, 'model_not_found']);
assert.match(e.message, /line 3:/);
e = await refused(upload(azure, 'dup.jsonl', file('d', 3, (i, l) => (i === 2 ? line('d-0000', 'summarize', 'x') : l))));
assert.deepEqual([e.status, e.code], [400, 'duplicate_custom_id']);
assert.match(e.message, /line 3:/);

// The AzureOpenAI client on the classic surface: batches a page at a time.
const made = [];
for (let i = 0; i < 3; i++) {
  const g = await upload(azure, `small-${i}.jsonl`, file(`a${i}`, 2));
  made.push((await azure.batches.create({ input_file_id: g.id, endpoint: '/chat/completions', completion_window: '24h' })).id);
}
const page = await azure.batches.list({ limit: 2 });
assert.equal(page.data.length, 2);
assert.ok(page.hasNextPage());
const listed = [];
for await (const x of azure.batches.list({ limit: 2 })) listed.push(x.id);
assert.deepEqual(listed.slice(0, 4), [...made].reverse().concat([b.id]));
const done = await finish(azure, made[0]);
assert.equal((await lines(azure, done.output_file_id)).length, 2);

// Another tenant's batch and files are not found.
assert.equal((await refused(other.batches.retrieve(b.id))).status, 404);
assert.equal((await refused(other.files.retrieve(f.id))).status, 404);
assert.equal((await refused(other.files.content(b.output_file_id))).status, 404);
assert.equal((await refused(new OpenAI({ baseURL: `${url}/api/openai/v1`, apiKey: 'opk_wrong', defaultHeaders: headers, maxRetries: 0 }).batches.list())).status, 401);

console.log(JSON.stringify({ batch: b.id, lines: out.length, prompt_tokens: prompt, completion_tokens: completion }));
