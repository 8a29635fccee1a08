/**
 * The entry point of the engine's dedicated Worker: an {@link EngineHost} on the Worker's
 * own port. The page starts it with `new Worker(new URL('./engine-worker.js',
 * import.meta.url), { type: 'module' })`, which bundlers follow.
 */
import { EngineHost } from './engine-host.js';
import type { FromEngine, Port, ToEngine } from './engine-protocol.js';

new EngineHost(self as unknown as Port<ToEngine, FromEngine>);
