import { ValueTransformer } from 'typeorm';

/**
 * PostgreSQL `bigint` columns hold money in nano-units; the drivers hand them over as strings
 * (node-postgres) or numbers (the embedded driver is told to do the same), so convert
 * both ways to a JS bigint and never through a float.
 */
export const bigintTransformer: ValueTransformer = {
  to: (value: bigint | null | undefined) => (value === null || value === undefined ? value : value.toString()),
  from: (value: string | number | bigint | null) => (value === null ? null : BigInt(value)),
};
