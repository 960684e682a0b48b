import { DynamicModule, Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { AdminModule } from './admin/admin.module';
import { ChatModule } from './chat/chat.module';
import { CatalogModule } from './catalog/catalog.module';
import { SettingsModule } from './common/settings.module';
import { DatabaseModule } from './database/database.module';
import { HealthModule } from './health/health.module';
import { VideoModule } from './video/video.module';
import { ImagesModule } from './images/images.module';
import { SpeechModule } from './speech/speech.module';
import type { GatewayOptions } from './gateway-options';

@Module({})
export class AppModule {
  static forRoot(options: GatewayOptions): DynamicModule {
    return {
      module: AppModule,
      imports: [
        SettingsModule.forRoot(options),
        ScheduleModule.forRoot(),
        DatabaseModule.forRoot(options.database),
        CatalogModule,
        ChatModule,
        ImagesModule,
        SpeechModule,
        VideoModule,
        HealthModule,
        AdminModule,
      ],
    };
  }
}
