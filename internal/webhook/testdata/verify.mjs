// Verifies captured webhook deliveries with the standardwebhooks package
// (the Standard Webhooks reference verifier). Reads a JSON array of
// {headers, body} on stdin, the secret in WEBHOOK_SECRET; prints how many
// verified and exits non-zero if any did not.
import { Webhook } from 'standardwebhooks';

const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const deliveries = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const wh = new Webhook(process.env.WEBHOOK_SECRET);
let ok = 0;
for (const d of deliveries) {
  const payload = wh.verify(d.body, d.headers); // throws if the signature or timestamp is wrong
  if (typeof payload !== 'object' || payload === null) throw new Error('payload is not an object');
  ok++;
}
const tampered = deliveries[0];
try {
  wh.verify(tampered.body + ' ', tampered.headers);
  throw new Error('a tampered body verified');
} catch (e) {
  if (e.message === 'a tampered body verified') throw e;
}
console.log(JSON.stringify({ verified: ok }));
