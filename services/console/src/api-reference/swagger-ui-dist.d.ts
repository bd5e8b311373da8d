// swagger-ui-dist ships no types; the console calls its bundle with the options below.
declare module 'swagger-ui-dist/swagger-ui-es-bundle.js' {
  export default function SwaggerUI(options: {
    domNode: HTMLElement;
    url: string;
    deepLinking?: boolean;
    supportedSubmitMethods?: string[];
    validatorUrl?: string | null;
    defaultModelsExpandDepth?: number;
    docExpansion?: 'list' | 'full' | 'none';
  }): unknown;
}
