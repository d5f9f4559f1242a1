export { Rng, Zipf } from './rng';
export { EventStream, INVALID_KINDS, keyOf, toBody, type GenEvent, type GeneratedEvent, type StreamOptions } from './stream';
export { Oracle, flatten, goldRowId, type GoldRow, type Route } from './oracle';
