import { engineInfo } from '/lib/index.mjs';

const byId = (id) => document.getElementById(id);

async function showEngine() {
  const started = performance.now();
  try {
    const info = await engineInfo();
    byId('engine-status').textContent = 'ready';
    byId('engine-version').textContent = info.version;
    byId('engine-simd').textContent = info.simd;
    byId('engine-load-ms').textContent = `${Math.round(performance.now() - started)} ms`;
  } catch (error) {
    const status = byId('engine-status');
    status.textContent = error.message;
    status.classList.add('error');
  }
}

showEngine();
