import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { ShutdownState } from '../common/shutdown-state';
import { DatabaseHealthIndicator } from './database.health';
import { HealthController } from './health.controller';

@Module({
  imports: [TerminusModule.forRoot({ logger: false })],
  controllers: [HealthController],
  // ShutdownState is found by the graceful shutdown through app.get(): one instance per app.
  providers: [DatabaseHealthIndicator, ShutdownState],
})
export class HealthModule {}
