#!/usr/bin/env bash
# Builds the real parts the sandbox runs (temporal CLI, etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler), and kubectl for the tests' `kubectl
# auth can-i`, from their Go modules, into a cache outside the work tree keyed
# by version. A second run builds nothing.
#
#   scripts/binaries.sh            build what is missing, print the bin directory
#   scripts/binaries.sh --print    print the bin directory without building
#   scripts/binaries.sh --cluster  also Temporal's server and its SQL schema tool (with the schema
#                                  files), for `tend sandbox up --temporal cluster`
#   scripts/binaries.sh --helm     only Helm, for the chart's tests (deploy/helm/tend); prints the
#                                  helm binary's path as its last line
#   scripts/binaries.sh --promtool only Prometheus's promtool, for the alert rules' checks and unit
#                                  tests (deploy/prometheus); prints its path as its last line
#   scripts/binaries.sh --part P   only part P: temporal, etcd, kubernetes, kubectl, server, helm or
#                                  promtool (scripts/test.ts builds them one at a time, each lane
#                                  starting once its own are built)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cache=${TEND_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tend}

TEMPORAL_VERSION=v1.5.1
# Temporal's server for the cluster sandbox: the newest release whose go directive this Go
# satisfies (v1.30.9 and later need Go 1.26.10); the same version as docker-compose.yml.
TEMPORAL_SERVER_VERSION=v1.30.8
# Its Web UI: the UI server the temporal CLI above embeds (its Go module carries the built pages).
TEMPORAL_UI_VERSION=v2.42.1
# Helm for the chart's lint, template and install tests: the newest v3 release (its go directive,
# 1.26.0, is one this Go satisfies).
HELM_VERSION=v3.22.0
# promtool for `promtool check rules` and `promtool test rules`: Prometheus's Go module numbers
# release 3.N.M as v0.3NN.M; v0.316.0 (Prometheus 3.16.0) is one whose go directive this Go satisfies.
PROMETHEUS_VERSION=v0.316.0
ETCD_VERSION=$(awk '/go.etcd.io\/etcd\/server\/v3 v/ {print $NF; exit}' "$here/tools/etcd/go.mod")
K8S_VERSION=$(awk '/k8s.io\/kubernetes v/ {print $NF; exit}' "$here/tools/kubernetes/go.mod")

temporal_dir="$cache/temporal-$TEMPORAL_VERSION"
etcd_dir="$cache/etcd-$ETCD_VERSION"
k8s_dir="$cache/kubernetes-$K8S_VERSION"
kubectl_dir="$cache/kubectl-$K8S_VERSION"
server_dir="$cache/temporal-server-$TEMPORAL_SERVER_VERSION-ui-$TEMPORAL_UI_VERSION"
helm_dir="$cache/helm-$HELM_VERSION"
promtool_dir="$cache/promtool-$PROMETHEUS_VERSION"

if [ "${1:-}" = "--print" ]; then
  printf 'TEMPORAL=%s\nETCD=%s\nKUBERNETES=%s\nKUBECTL=%s\nTEMPORAL_SERVER=%s\nHELM=%s\nPROMTOOL=%s\n' \
    "$temporal_dir/temporal" "$etcd_dir/etcd" "$k8s_dir" "$kubectl_dir/kubectl" "$server_dir" "$helm_dir/helm" \
    "$promtool_dir/promtool"
  exit 0
fi

# Go's default install place, for shells whose PATH does not have it.
[ -d /usr/local/go/bin ] && PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || { echo "binaries: Go is required (https://go.dev/dl); none on PATH" >&2; exit 1; }

# Each build goes to a temporary folder and is moved into place whole, so an
# interrupted build never leaves a half-written binary that looks cached.
build() { # name dir command...
  local name=$1 dir=$2; shift 2
  if [ -f "$dir/.complete" ]; then return 0; fi
  # One build of a version at a time: a second run (another test lane, another shell) waits for
  # the first and then finds it cached, instead of compiling the same packages beside it.
  mkdir -p "$(dirname "$dir")"
  local lock
  exec {lock}>"$dir.lock"
  if command -v flock >/dev/null; then
    flock -n "$lock" || { echo "binaries: waiting for another build of $name" >&2; flock "$lock"; }
  fi
  if [ -f "$dir/.complete" ]; then exec {lock}>&-; return 0; fi
  echo "binaries: building $name (first time only; several minutes on 2 cores)" >&2
  local tmp="$dir.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$tmp"
  local start=$SECONDS
  ( "$@" "$tmp" ) || { rm -rf "$tmp"; echo "binaries: building $name failed" >&2; exit 1; }
  touch "$tmp/.complete"
  rm -rf "$dir"; mv "$tmp" "$dir"
  echo "binaries: built $name in $((SECONDS - start))s -> $dir" >&2
  exec {lock}>&-
}

build_temporal() {
  GOBIN="$1" GOFLAGS=-trimpath go install -ldflags='-s -w' "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_VERSION"
}

build_etcd() {
  (cd "$here/tools/etcd" && go build -trimpath -ldflags='-s -w' -o "$1/etcd" go.etcd.io/etcd/server/v3)
}

k8s_ldflags() {
  local v=${K8S_VERSION#v} major minor
  major=${v%%.*}; minor=${v#*.}; minor=${minor%%.*}
  local pkg=k8s.io/component-base/version
  echo "-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
}

# The server (all four services in one binary), the SQL schema tool, and the schema files the
# tool applies, copied from the module so the cache holds everything the cluster sandbox needs.
build_temporal_server() {
  GOBIN="$1" GOFLAGS='-trimpath -mod=mod' go install -ldflags='-s -w' \
    "go.temporal.io/server/cmd/server@$TEMPORAL_SERVER_VERSION" "go.temporal.io/server/cmd/tools/sql@$TEMPORAL_SERVER_VERSION"
  mv "$1/server" "$1/temporal-server"
  mv "$1/sql" "$1/temporal-sql-tool"
  GOBIN="$1/ui" GOFLAGS='-trimpath -mod=mod' go install -ldflags='-s -w' "github.com/temporalio/ui-server/v2/cmd/server@$TEMPORAL_UI_VERSION"
  mv "$1/ui/server" "$1/temporal-ui-server"
  rmdir "$1/ui"
  local src
  src="$(go env GOMODCACHE)/go.temporal.io/server@$TEMPORAL_SERVER_VERSION/schema/postgresql"
  mkdir -p "$1/schema"
  cp -r "$src" "$1/schema/"
  chmod -R u+w "$1/schema"
}

build_kubernetes() {
  (cd "$here/tools/kubernetes" && go build -trimpath -ldflags="$(k8s_ldflags)" -o "$1/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler)
}

# Its own folder, so that a cache built before kubectl was added keeps its control plane.
build_kubectl() {
  (cd "$here/tools/kubernetes" && go build -trimpath -ldflags="$(k8s_ldflags)" -o "$1/kubectl" k8s.io/kubernetes/cmd/kubectl)
}

# Helm with the flags its own Makefile sets: its version, and the Kubernetes version its client
# libraries speak, which `helm template` and `helm lint` take for the cluster's when given none.
build_helm() {
  local mod k8s major minor
  mod=$(cd "$1" && go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | awk -F'"' '/"GoMod"/ {print $4}')
  k8s=$(awk '$1 == "k8s.io/client-go" {print $2; exit}' "$mod")
  k8s=${k8s#v0.}; major=1; minor=${k8s%%.*}
  GOBIN="$1" GOFLAGS='-trimpath -mod=mod' CGO_ENABLED=0 go install -ldflags="-s -w \
    -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean \
    -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=$major -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$minor \
    -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=$major -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
}

# promtool with the version Prometheus's own build stamps (3.N.M from v0.3NN.M), so that
# `promtool --version` names the release it is. Without the cloud service discoveries
# (Prometheus's build tag remove_all_sd), which checking and testing rules never use: a quarter of
# the build (5 minutes from a cold Go cache on 2 busy cores, against about 20).
build_promtool() {
  local v=${PROMETHEUS_VERSION#v0.} pkg=github.com/prometheus/common/version
  local release="${v:0:1}.$((10#${v:1:2})).${v#*.}"
  GOBIN="$1" GOFLAGS='-trimpath -mod=mod' CGO_ENABLED=0 go install -tags remove_all_sd -ldflags="-s -w \
    -X $pkg.Version=$release -X $pkg.Revision=$PROMETHEUS_VERSION -X $pkg.Branch=release-${release%.*}" \
    "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION"
}

mkdir -p "$cache"
if [ "${1:-}" = "--part" ]; then
  case "${2:-}" in
    temporal) build "temporal $TEMPORAL_VERSION" "$temporal_dir" build_temporal ;;
    etcd) build "etcd $ETCD_VERSION" "$etcd_dir" build_etcd ;;
    kubernetes) build "kubernetes $K8S_VERSION" "$k8s_dir" build_kubernetes ;;
    kubectl) build "kubectl $K8S_VERSION" "$kubectl_dir" build_kubectl ;;
    server) build "temporal server $TEMPORAL_SERVER_VERSION" "$server_dir" build_temporal_server ;;
    helm) build "helm $HELM_VERSION" "$helm_dir" build_helm ;;
    promtool) build "promtool $PROMETHEUS_VERSION" "$promtool_dir" build_promtool ;;
    *) echo "binaries: --part takes temporal, etcd, kubernetes, kubectl, server, helm or promtool, not '${2:-}'" >&2; exit 2 ;;
  esac
  exit 0
fi
if [ "${1:-}" = "--promtool" ]; then
  build "promtool $PROMETHEUS_VERSION" "$promtool_dir" build_promtool
  echo "$promtool_dir/promtool"
  exit 0
fi
if [ "${1:-}" = "--helm" ]; then
  build "helm $HELM_VERSION" "$helm_dir" build_helm
  echo "$helm_dir/helm"
  exit 0
fi
build "temporal $TEMPORAL_VERSION" "$temporal_dir" build_temporal
build "etcd $ETCD_VERSION" "$etcd_dir" build_etcd
build "kubernetes $K8S_VERSION" "$k8s_dir" build_kubernetes
build "kubectl $K8S_VERSION" "$kubectl_dir" build_kubectl
if [ "${1:-}" = "--cluster" ]; then build "temporal server $TEMPORAL_SERVER_VERSION" "$server_dir" build_temporal_server; fi
echo "$cache"
