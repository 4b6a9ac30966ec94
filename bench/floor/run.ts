/**
 * bench:floor: the floor (`node:http`), Fastify-bare and the service, and with `--peers 1` the
 * competent PostgreSQL peer, in the same rounds on the same requests, their answers checked equal
 * first; every side's CPU per request also as a ratio to the floor's in the same round. The runner
 * is bench:peer's (`../peer.ts`); results in bench/results/floor-<UTC date-time>.json.
 */
import { runFromCommandLine } from '../peer.js';

runFromCommandLine('floor');
