import { DynamicModule, Global, Module } from '@nestjs/common';
import { GATEWAY_CONFIG } from '../config/gateway-config';
import { ADMIN_TOKEN, GatewayOptions } from '../gateway-options';
import { KEY_CACHE_SETTINGS } from '../auth/key.service';
import { KEY_FAILURE_SETTINGS } from '../auth/key-failure-limiter';
import { QUOTA_SETTINGS } from '../metering/quota.service';
import { USAGE_WRITER_SETTINGS } from '../metering/usage-writer.service';
import { USAGE_RETENTION_SETTINGS } from '../metering/usage-retention.service';
import { LINE_SETTINGS } from '../upstream/line-registry';
import { TRANSLATION_SETTINGS } from '../chat/translated-call.service';
import { Clock } from '../auth/clock';
import { VIDEO_SETTINGS } from '../video/video-settings';

/** The process's options and the clock, available to every module. */
@Global()
@Module({})
export class SettingsModule {
  static forRoot(options: GatewayOptions): DynamicModule {
    const providers = [
      { provide: GATEWAY_CONFIG, useValue: options.config },
      { provide: ADMIN_TOKEN, useValue: options.adminToken },
      { provide: KEY_CACHE_SETTINGS, useValue: options.keyCache },
      { provide: KEY_FAILURE_SETTINGS, useValue: options.keyFailures },
      { provide: QUOTA_SETTINGS, useValue: options.quota },
      { provide: USAGE_WRITER_SETTINGS, useValue: options.usageWriter },
      { provide: USAGE_RETENTION_SETTINGS, useValue: options.usageRetention },
      { provide: LINE_SETTINGS, useValue: options.lines },
      { provide: TRANSLATION_SETTINGS, useValue: options.translation },
      { provide: VIDEO_SETTINGS, useValue: options.video },
      Clock,
    ];
    return { module: SettingsModule, providers, exports: providers.map((provider) => ('provide' in provider ? provider.provide : provider)) };
  }
}
