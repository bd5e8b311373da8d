import { useEffect, useRef, useState } from 'preact/hooks';

/**
 * The API reference: GET /openapi.json (generated from the routes' own schemas) rendered in the
 * console, every operation with its parameters, bodies, answers and error codes. The renderer is
 * a chunk of its own, loaded on this page only.
 */
export function ApiReference() {
  const target = useRef<HTMLDivElement>(null);
  const [failed, setFailed] = useState(false);
  useEffect(() => {
    let cancelled = false;
    import('../api-reference/render.js').then(
      ({ renderApiReference }) => {
        if (!cancelled && target.current) renderApiReference(target.current, '/openapi.json');
      },
      () => setFailed(true),
    );
    return () => {
      cancelled = true;
    };
  }, []);
  return (
    <section aria-labelledby="api-reference-title">
      <h1 id="api-reference-title">API reference</h1>
      <p class="muted">
        The OpenAPI 3.1 document Herald serves at <a href="/openapi.json">/openapi.json</a>.
      </p>
      {failed && (
        <div class="note note-error" role="alert">
          The API reference could not be loaded; reload the page.
        </div>
      )}
      <div ref={target} class="api-reference" />
    </section>
  );
}
