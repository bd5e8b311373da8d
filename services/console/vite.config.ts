import { defineConfig } from 'vite';

// The console is served by ingest under /console/ (and so through the gateway and the
// standalone process). JSX goes through Vite's own transform with Preact's automatic runtime
// (tsconfig's jsx/jsxImportSource), so no framework plugin is needed.
export default defineConfig({
  base: '/console/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: true,
    target: 'es2022',
    // The API reference's renderer (Swagger UI, with React inside) is one 1.5 MB chunk, loaded by
    // that page only; the main bundle stays small.
    chunkSizeWarningLimit: 1600,
  },
});
