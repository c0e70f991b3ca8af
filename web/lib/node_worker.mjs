// The engine in a Node worker_threads Worker (loadModel(source, { useWorker: true }) in Node): worker.mjs's
// protocol on the parent port, so a long translation leaves the main thread's event loop free.
import { parentPort } from 'node:worker_threads';
import { serve } from './worker.mjs';

serve({
  addEventListener: (type, listener) => parentPort.on(type, (data) => listener({ data })),
  postMessage: (message, transfer) => parentPort.postMessage(message, transfer),
});
