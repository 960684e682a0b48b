/**
 * Rows of a raw `manager.query`: TypeORM returns `[rows, affectedCount]` for UPDATE and
 * DELETE statements and the rows alone for everything else.
 */
export function returnedRows<T>(result: unknown): T[] {
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') {
    return result[0] as T[];
  }
  return result as T[];
}
