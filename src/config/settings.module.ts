import { DynamicModule, Global, Module } from '@nestjs/common';
import { GATEWAY_CONFIG } from './gateway-config';
import { ADMIN_TOKEN, GatewayOptions } from './gateway-options';
import { KEY_CACHE_SETTINGS } from './settings/auth.settings';
import { KEY_FAILURE_SETTINGS } from './settings/auth.settings';
import { QUOTA_SETTINGS } from './settings/metering.settings';
import { USAGE_WRITER_SETTINGS } from './settings/metering.settings';
import { USAGE_RETENTION_SETTINGS } from './settings/metering.settings';
import { LINE_SETTINGS } from './settings/upstream.settings';
import { CATALOG_SETTINGS } from './settings/catalog.settings';
import { TRANSLATION_SETTINGS } from './settings/translation.settings';
import { Clock } from '../common/clock';
import { VIDEO_SETTINGS } from './settings/video.settings';
import { CONSOLE_SETTINGS } from './settings/console.settings';
import { RATE_LIMIT_SETTINGS, REPLICA_LIMIT_SETTINGS } from './settings/limits.settings';
import { ALERT_SETTINGS } from './settings/alerts.settings';

/** The process's options and the clock, available to every module. */
@Global()
@Module({})
export class SettingsModule {
  static forRoot(options: GatewayOptions): DynamicModule {
    const providers = [
      { provide: GATEWAY_CONFIG, useValue: options.config },
      { provide: ADMIN_TOKEN, useValue: [...(options.adminToken ? [{ name: 'admin', token: options.adminToken }] : []), ...(options.adminTokens ?? [])] },
      { provide: KEY_CACHE_SETTINGS, useValue: options.keyCache },
      { provide: KEY_FAILURE_SETTINGS, useValue: options.keyFailures },
      { provide: QUOTA_SETTINGS, useValue: options.quota },
      { provide: USAGE_WRITER_SETTINGS, useValue: options.usageWriter },
      { provide: USAGE_RETENTION_SETTINGS, useValue: options.usageRetention },
      { provide: LINE_SETTINGS, useValue: options.lines },
      { provide: CATALOG_SETTINGS, useValue: options.catalog },
      { provide: TRANSLATION_SETTINGS, useValue: options.translation },
      { provide: VIDEO_SETTINGS, useValue: options.video },
      { provide: CONSOLE_SETTINGS, useValue: options.console },
      { provide: RATE_LIMIT_SETTINGS, useValue: options.rateLimits },
      { provide: REPLICA_LIMIT_SETTINGS, useValue: options.replicaLimits },
      { provide: ALERT_SETTINGS, useValue: options.alerts },
      Clock,
    ];
    return { module: SettingsModule, providers, exports: providers.map((provider) => ('provide' in provider ? provider.provide : provider)) };
  }
}
