import { SetMetadata } from '@nestjs/common';
import type { InterfaceName } from '../config/gateway-config';

export const ENTRY_METADATA = 'gateway:entry';

export interface EntryDeclaration {
  entry: InterfaceName;
  /** Whether a model without this interface may be reached by protocol translation. */
  translatable: boolean;
  /** Whether a `multipart/form-data` body is accepted besides JSON (format A edits). */
  forms: boolean;
  /** Reads the model id from the route parameters (format C); absent: the body's `model`. Throws GatewayError. */
  modelFromPath?: (params: Record<string, string | undefined>) => string;
}

export type EntryOptions = Partial<Omit<EntryDeclaration, 'entry'>>;

/** Declares which interface a route is the entry point of. */
export const Entry = (entry: InterfaceName, options: EntryOptions = {}) =>
  SetMetadata(ENTRY_METADATA, {
    entry,
    translatable: options.translatable ?? false,
    forms: options.forms ?? false,
    modelFromPath: options.modelFromPath,
  } satisfies EntryDeclaration);
