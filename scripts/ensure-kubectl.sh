# Sourced by the test script: the Kubernetes manifests' test renders them with `kubectl kustomize`
# (infra/k8s); install kubectl with apt-get when it is missing.
if ! command -v kubectl >/dev/null 2>&1; then
  as_root_() { if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else "$@"; fi; }
  echo "installing kubectl with apt-get (for the Kubernetes manifests' test)…"
  as_root_ apt-get update -qq &&
    as_root_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kubectl >/dev/null ||
    echo "could not install kubectl: the Kubernetes manifests' test will fail" >&2
fi
