import { SetMetadata } from '@nestjs/common';
import type { InterfaceName } from '../config/gateway-config';

export const ENTRY_METADATA = 'gateway:entry';

export interface EntryDeclaration {
  entry: InterfaceName;
  /** Whether a model without this interface may be reached by protocol translation. */
  translatable: boolean;
}

/** Declares which interface a route is the entry point of. */
export const Entry = (entry: InterfaceName, options: { translatable?: boolean } = {}) =>
  SetMetadata(ENTRY_METADATA, { entry, translatable: options.translatable ?? false } satisfies EntryDeclaration);
