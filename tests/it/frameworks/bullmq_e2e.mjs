// bullmq end to end: a Queue, a Worker and QueueEvents against one server.
// Usage: node bullmq_e2e.mjs PORT. Prints "BULLMQ OK" and exits 0 on success.
import assert from 'node:assert/strict';
import { Queue, QueueEvents, Worker } from 'bullmq';

const port = Number(process.argv[2]);
const connection = { host: '127.0.0.1', port, maxRetriesPerRequest: null };
const name = 'e2e';

const queue = new Queue(name, { connection });
await queue.obliterate({ force: true });
const events = new QueueEvents(name, { connection });
await events.waitUntilReady();

const worker = new Worker(
  name,
  async (job) => {
    if (job.name === 'bad') throw new Error('boom');
    if (job.name === 'flaky' && job.attemptsMade === 0) throw new Error('first try');
    return { sum: job.data.a + job.data.b };
  },
  { connection },
);
worker.on('error', (err) => console.error('worker error:', err));

const ok = await queue.add('add', { a: 2, b: 3 });
const value = await ok.waitUntilFinished(events, 10000);
assert.deepEqual(value, { sum: 5 });
assert.equal(await ok.getState(), 'completed');
const done = await queue.getJob(ok.id);
assert.deepEqual(done.returnvalue, { sum: 5 });

const bad = await queue.add('bad', {});
await assert.rejects(bad.waitUntilFinished(events, 10000), /boom/);
assert.equal(await bad.getState(), 'failed');
const failed = await queue.getJob(bad.id);
assert.equal(failed.failedReason, 'boom');

// A delayed job, a prioritized one and one that succeeds on its retry.
const delayed = await queue.add('add', { a: 1, b: 1 }, { delay: 300 });
assert.equal(await delayed.getState(), 'delayed');
const prio = await queue.add('add', { a: 2, b: 2 }, { priority: 5 });
const flaky = await queue.add('flaky', { a: 3, b: 3 }, { attempts: 2 });
assert.deepEqual(await prio.waitUntilFinished(events, 10000), { sum: 4 });
assert.deepEqual(await flaky.waitUntilFinished(events, 10000), { sum: 6 });
assert.deepEqual(await delayed.waitUntilFinished(events, 10000), { sum: 2 });
assert.equal((await queue.getJob(flaky.id)).attemptsMade, 2);

const counts = await queue.getJobCounts('completed', 'failed', 'waiting', 'active', 'delayed');
assert.deepEqual(counts, { completed: 4, failed: 1, waiting: 0, active: 0, delayed: 0, paused: 0 });
const completed = await queue.getCompleted();
assert.equal(completed.length, 4);

await worker.close();
await events.close();
await queue.close();
console.log('BULLMQ OK');
