/**
 * The one module that imports the client library. The adapter's other files take kafkajs from here,
 * so a maintained client replaces what uses this module without touching the rest of the service.
 */
import kafkajs from 'kafkajs';

export default kafkajs;
export { Kafka, Partitioners, logLevel } from 'kafkajs';
export type { Admin, Producer, logCreator } from 'kafkajs';
