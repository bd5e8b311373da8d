import SwaggerUI from 'swagger-ui-dist/swagger-ui-es-bundle.js';
import 'swagger-ui-dist/swagger-ui.css';

/**
 * Renders the API's OpenAPI document (GET /openapi.json) with Swagger UI, bundled from the npm
 * registry into this chunk, which only the API reference page loads. A reference, not a client:
 * no "Try it out" (the console's screens are the client), no online validator badge, nothing
 * fetched but the document, from Herald itself.
 */
export function renderApiReference(element: HTMLElement, url: string): void {
  SwaggerUI({
    domNode: element,
    url,
    deepLinking: false,
    supportedSubmitMethods: [],
    validatorUrl: null,
    defaultModelsExpandDepth: 0,
    docExpansion: 'list',
  });
}
