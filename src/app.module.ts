import { DynamicModule, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { AdminModule } from './admin/admin.module';
import { ChatModule } from './chat/chat.module';
import { CatalogModule } from './catalog/catalog.module';
import { SettingsModule } from './config/settings.module';
import { DatabaseModule } from './database/database.module';
import { HealthModule } from './health/health.module';
import { VideoModule } from './video/video.module';
import { ImagesModule } from './images/images.module';
import { SpeechModule } from './speech/speech.module';
import type { GatewayOptions } from './config/gateway-options';
import type { Logger } from 'pino';
import { ObservabilityModule } from './observability/observability.module';
import { KeyStandingModule } from './governance/key-standing.controller';

@Module({})
export class AppModule {
  /** `log`: the application's JSON logger (call lines; made by createGatewayApp). */
  static forRoot(options: GatewayOptions, log: Logger): DynamicModule {
    return {
      module: AppModule,
      imports: [
        SettingsModule.forRoot(options),
        ObservabilityModule.forRoot(log),
        ScheduleModule.forRoot(),
        DatabaseModule.forRoot(options.database),
        CatalogModule,
        ChatModule,
        ImagesModule,
        SpeechModule,
        VideoModule,
        HealthModule,
        AdminModule,
        KeyStandingModule,
      ],
    };
  }
}
