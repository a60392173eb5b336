#!/usr/bin/env bash
# Checks scripts/ldap-test-server.sh: starts it on a free port in a temp dir,
# checks binds, a group search as the user and memberOf, stops it.
#   scripts/ldap-test-server.check.sh
set -euo pipefail
server="$(cd "$(dirname "$0")" && pwd)/ldap-test-server.sh"

dir=$(mktemp -d -t paddlecloud-ldap.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url="ldap://127.0.0.1:$port"
cleanup() { "$server" stop "$dir" || true; rm -rf "$dir"; }
trap cleanup EXIT

base="dc=example,dc=org"
alice="uid=alice,ou=people,$base"
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

t0=${EPOCHREALTIME//[.,]/}
"$server" start "$dir" "$port"
us=$((${EPOCHREALTIME//[.,]/} - t0))
ok "started in $dir on $url in $((us / 1000)) ms"

[ "$(ldapwhoami -x -H "$url" -D "$alice" -w alice-pass)" = "dn:$alice" ] || fail "alice bind"
ok "alice binds with alice-pass"

rc=0
ldapwhoami -x -H "$url" -D "$alice" -w wrong-pass >/dev/null 2>&1 || rc=$?
[ "$rc" = 49 ] || fail "wrong password gave exit $rc, not 49 (invalid credentials)"
ok "alice with a wrong password: 49 invalid credentials"

rc=0
ldapwhoami -x -H "$url" -D "uid=nobody,ou=people,$base" -w x >/dev/null 2>&1 || rc=$?
[ "$rc" = 49 ] || fail "unknown user gave exit $rc, not 49"
ok "unknown user: 49 invalid credentials"

for u in bob carol; do
  ldapwhoami -x -H "$url" -D "uid=$u,ou=people,$base" -w "$u-pass" >/dev/null || fail "$u bind"
done
ldapwhoami -x -H "$url" -D "cn=admin,$base" -w admin-secret >/dev/null || fail "admin bind"
ok "bob, carol and cn=admin bind"

groups=$(ldapsearch -x -LLL -H "$url" -D "$alice" -w alice-pass -b "ou=groups,$base" \
  "(&(objectClass=groupOfNames)(member=$alice))" dn | sed -n 's/^dn: //p' | sort | tr '\n' ' ')
[ "$groups" = "cn=ml-team,ou=groups,$base cn=ml-team-owners,ou=groups,$base " ] || fail "alice's groups by member search: $groups"
ok "as alice, groupOfNames member search: $groups"

entry=$(ldapsearch -x -LLL -H "$url" -D "$alice" -w alice-pass -b "$alice" -s base '(objectClass=*)' cn mail memberOf)
grep -qx "cn: Alice Example" <<<"$entry" && grep -qx "mail: alice@example.org" <<<"$entry" || fail "alice's own entry: $entry"
ok "as alice, own entry has cn and mail"

other=$(ldapsearch -x -LLL -H "$url" -D "uid=bob,ou=people,$base" -w bob-pass -b "$alice" -s base '(objectClass=*)' userPassword)
grep -qx "dn: $alice" <<<"$other" && ! grep -q userPassword <<<"$other" || fail "bob reading alice's userPassword: $other"
ok "as bob, alice's entry readable but not her userPassword"

memberof=$(sed -n 's/^memberOf: //p' <<<"$entry" | sort | tr '\n' ' ')
if [ "$memberof" = "cn=ml-team,ou=groups,$base cn=ml-team-owners,ou=groups,$base " ]; then
  ok "as alice, memberOf: $memberof"
else
  fail "alice's memberOf: '$memberof'"
fi
carol=$(ldapsearch -x -LLL -H "$url" -D "uid=carol,ou=people,$base" -w carol-pass -b "uid=carol,ou=people,$base" -s base '(objectClass=*)' memberOf)
! grep -q memberOf <<<"$carol" || fail "carol has memberOf: $carol"
ok "carol has no memberOf"

n=$(ldapsearch -x -LLL -H "$url" -D "uid=bob,ou=people,$base" -w bob-pass -b "ou=people,$base" '(objectClass=inetOrgPerson)' dn | grep -c '^dn:')
[ "$n" = 3 ] || fail "bob sees $n people, not 3"
ok "as bob, all 3 people readable"

n=$(ldapsearch -x -LLL -H "$url" -b "$base" '(objectClass=*)' dn 2>/dev/null | grep -c '^dn:' || true)
[ "$n" = 0 ] || fail "anonymous sees $n entries"
ok "anonymous sees no entries"

pw=$(ldapsearch -x -LLL -H "$url" -D "cn=admin,$base" -w admin-secret -b "$alice" -s base '(objectClass=*)' userPassword)
grep -q '^userPassword:: ' <<<"$pw" || fail "admin cannot read userPassword"
ok "admin reads userPassword"

"$server" stop "$dir"
! ldapwhoami -x -H "$url" -D "$alice" -w alice-pass >/dev/null 2>&1 || fail "still answering after stop"
ok "stopped"
echo "all LDAP test server checks passed"
