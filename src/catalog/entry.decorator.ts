import { SetMetadata } from '@nestjs/common';
import type { InterfaceName } from '../config/gateway-config';

export const ENTRY_METADATA = 'gateway:entry';

/** Declares which interface a route is the entry point of. */
export const Entry = (entry: InterfaceName) => SetMetadata(ENTRY_METADATA, entry);
