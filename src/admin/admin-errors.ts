import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiResponse } from '@nestjs/swagger';

class ErrorDetail {
  @ApiProperty() message!: string;
  @ApiProperty({ example: 'invalid_request_error' }) type!: string;
  @ApiProperty({ type: String, nullable: true, example: 'not_found', description: 'null for 400 (SPEC.md), the code otherwise.' })
  code!: string | null;
}

export class ErrorView {
  @ApiProperty({ type: ErrorDetail }) error!: ErrorDetail;
}

/** The errors every admin route may answer, in the gateway's error shape. */
export function AdminErrors() {
  return applyDecorators(
    ApiResponse({ status: 400, description: 'Bad input; the message names the field.', type: ErrorView }),
    ApiResponse({ status: 401, description: 'Missing or wrong admin token (`invalid_api_key`).', type: ErrorView }),
    ApiResponse({
      status: 404,
      description: 'No such owner, key, record, line or model (`not_found`); every route when ADMIN_TOKEN is unset.',
      type: ErrorView,
    }),
    ApiResponse({ status: 409, description: 'The id exists already, a stale `version`, or a line still in use (`conflict`).', type: ErrorView }),
  );
}
