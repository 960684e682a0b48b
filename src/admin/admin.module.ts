import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { MeteringModule } from '../metering/metering.module';
import { AdminController } from './admin.controller';
import { AdminGuard } from './admin.guard';
import { AdminService } from './admin.service';

@Module({
  imports: [AuthModule, MeteringModule],
  controllers: [AdminController],
  providers: [AdminGuard, AdminService],
})
export class AdminModule {}
