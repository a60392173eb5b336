#!/usr/bin/env bash
# What a real node must do, checked from outside with kubectl (run by
# `scripts/kube-test-cluster.sh smoke`, inside `run`): pods run in containers and
# become Ready; logs and exec go through the apiserver to the kubelet; a
# container over its memory limit is OOMKilled; an image that is not there
# says ErrImagePull/ImagePullBackOff; a ClusterIP Service reaches another pod
# and the pod behind it (hairpin) through kube-proxy; cluster DNS resolves
# Services, headless Services and hostname.subdomain pods, and nothing else.
# Prints each check's time; exits non-zero if any failed.
set -uo pipefail
M=$(dirname "$0")/manifests
out=$(mktemp)
trap 'rm -f "$out"' EXIT
pass=0
fail=0
tick() { t0=${EPOCHREALTIME//[.,]/}; }
took() {
  local us=$((${EPOCHREALTIME//[.,]/} - t0))
  printf '%d.%01d s' $((us / 1000000)) $((us % 1000000 / 100000))
}
check() {   # NAME COMMAND...
  local name=$1
  shift
  if "$@" >"$out" 2>&1; then
    pass=$((pass + 1))
    echo "ok   $name ($(took))"
  else
    fail=$((fail + 1))
    echo "FAIL $name ($(took))"
    tail -n 5 "$out"
  fi
}
until_ok() {   # COMMAND...: within 60 s
  local n=0
  until "$@" >/dev/null 2>&1; do
    n=$((n + 1))
    [ $n -lt 300 ] || return 1
    sleep 0.2
  done
}
container() {   # POD FIELD: of its first container's status
  kubectl get pod "$1" -o jsonpath="{.status.containerStatuses[0].$2}"
}
oom_killed() { [ "$(container oom state.terminated.reason)/$(container oom state.terminated.exitCode)" = OOMKilled/137 ]; }
pull_failed() { container badimage state.waiting.reason | grep -qE 'ErrImagePull|ImagePullBackOff'; }
resolves() {   # POD NAME IP
  kubectl exec "$1" -- getent hosts "$2" | grep -q "^$3 "
}
headless_ips() {
  kubectl exec hello -- getent ahostsv4 workers.default.svc.cluster.local | awk '{print $1}' | sort -u | wc -l
}
two_headless_ips() { [ "$(headless_ips)" = 2 ]; }

tick
kubectl apply -f "$M/pods.yaml" -f "$M/svc.yaml" -f "$M/headless.yaml" >/dev/null
check "pods hello, web, trainer-0, trainer-1 Ready" \
  kubectl wait --for=condition=Ready pod/hello pod/web pod/trainer-0 pod/trainer-1 --timeout=60s
tick
check "kubectl logs" sh -c 'kubectl logs hello | grep -q "hello from hello"'
tick
check "kubectl exec" sh -c 'kubectl exec hello -- cat /etc/hostname | grep -qx hello'
tick
check "kubectl exec -i (stdin)" sh -c 'echo ping | kubectl exec -i hello -- cat | grep -qx ping'
tick
check "a container over its memory limit: OOMKilled, exit 137" until_ok oom_killed
tick
check "an image that is not there: ErrImagePull or ImagePullBackOff" until_ok pull_failed
cip=$(kubectl get svc web -o jsonpath='{.spec.clusterIP}')
tick
check "pod -> ClusterIP $cip -> another pod" until_ok kubectl exec hello -- timeout 3 wget -q -O - "http://$cip/"
tick
check "hairpin: a pod -> its own Service" kubectl exec web -- timeout 3 wget -q -O - "http://$cip/"
tick
check "DNS: web.default.svc.cluster.local is the ClusterIP" until_ok resolves hello web.default.svc.cluster.local "$cip"
tick
check "DNS: the short name through the search path, then HTTP" kubectl exec hello -- timeout 3 wget -q -O - http://web/
t1=$(kubectl get pod trainer-1 -o jsonpath='{.status.podIP}')
tick
check "DNS: trainer-1.workers (hostname.subdomain) is $t1" until_ok resolves trainer-0 trainer-1.workers "$t1"
tick
check "DNS: the headless Service has both pods" two_headless_ips
tick
check "DNS: an unknown cluster name is not found" sh -c '! kubectl exec hello -- getent hosts nope.default.svc.cluster.local'
tick
kubectl delete -f "$M/pods.yaml" -f "$M/svc.yaml" -f "$M/headless.yaml" --grace-period=0 --force --wait=true >/dev/null 2>&1
echo "     objects deleted ($(took))"
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
