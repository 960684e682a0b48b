import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import { AdminModule } from './admin.module';
import { SESSION_COOKIE } from './console-sessions';

export const ADMIN_DOCS_PATH = 'admin/docs';

/**
 * The admin API's OpenAPI document (`/admin/docs/openapi.json`) and its Swagger UI
 * (`/admin/docs`), served when the admin API is on. They describe the API, not its data, so
 * they answer without the token; the UI's Authorize button takes it for calls.
 */
export function serveAdminDocs(app: NestFastifyApplication): void {
  const config = new DocumentBuilder()
    .setTitle('Model gateway admin API')
    .setDescription(
      "Quota owners, keys, usage, the catalog (lines and models), budget alerts and the audit log. Every route needs `Authorization: Bearer <token>` (ADMIN_TOKEN or one of ADMIN_TOKENS) or the console's sign-in cookie from `POST /admin/session`, with `X-CSRF-Token` on changes. " +
        'Amounts are decimal currency units converted exactly from stored nano-units (1e-9). ' +
        'Errors are `{"error":{"message","type","code"}}`; a 400 names the field.',
    )
    .setVersion('1')
    .addBearerAuth({
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'ADMIN_TOKEN',
      description: 'ADMIN_TOKEN or one of ADMIN_TOKENS; its name is the actor in the audit log.',
    })
    .addCookieAuth(
      SESSION_COOKIE,
      { type: 'apiKey', in: 'cookie', name: SESSION_COOKIE, description: 'Set by POST /admin/session (the console).' },
      SESSION_COOKIE,
    )
    .build();
  const document = SwaggerModule.createDocument(app, config, { include: [AdminModule] });
  SwaggerModule.setup(ADMIN_DOCS_PATH, app, document, {
    jsonDocumentUrl: `${ADMIN_DOCS_PATH}/openapi.json`,
    yamlDocumentUrl: `${ADMIN_DOCS_PATH}/openapi.yaml`,
    customSiteTitle: 'Model gateway admin API',
  });
}
