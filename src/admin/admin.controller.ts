import { Controller, Get, Param, UseGuards } from '@nestjs/common';
import { AdminGuard } from './admin.guard';
import { AdminService } from './admin.service';

/** Operator read API. */
@Controller('admin')
@UseGuards(AdminGuard)
export class AdminController {
  constructor(private readonly admin: AdminService) {}

  @Get('usage/:requestId')
  usage(@Param('requestId') requestId: string) {
    return this.admin.usageRecord(requestId);
  }

  @Get('owners/:id')
  owner(@Param('id') id: string) {
    return this.admin.owner(id);
  }
}
