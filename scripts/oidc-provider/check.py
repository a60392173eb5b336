#!/usr/bin/env python3
"""Checks scripts/oidc-provider/provider.mjs end to end, and shows how a client
talks to it: starts it with a temporary users file on a free port, signs in
through the authorization code flow with PKCE as a browser would (login form,
cookies, redirects), exchanges the code at the token endpoint, verifies the
ID token's RS256 signature against /jwks and reads userinfo.

    python3 scripts/oidc-provider/check.py     (after scripts/setup.sh test)

Standard library only. Exits 0 when every check passes.
"""
import base64
import hashlib
import html.parser
import http.cookiejar
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT_ID = "paddlecloud-console"
# Characters that must be form-encoded in HTTP Basic (RFC 6749 2.3.1).
CLIENT_SECRET = "s3cret:with/odd+chars%"
REDIRECT_URI = "http://127.0.0.1:3999/auth/oidc/callback"
USERS = [
    {"sub": "alice", "password": "alice-pw", "email": "alice@example.org",
     "email_verified": True, "name": "Alice", "groups": ["ml-team", "ml-team-owners"]},
    {"sub": "bob", "password": "bob-pw", "email": "bob@example.org",
     "email_verified": False, "name": "Bob", "groups": []},
]


def ok(message):
    print(f"ok  {message}")


def fail(message):
    raise AssertionError(message)


def expect(condition, message):
    if not condition:
        fail(message)
    ok(message)


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class Browser:
    """Cookies, no automatic redirects: each hop is visible."""

    def __init__(self):
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.jar), NoRedirect)

    def request(self, url, data=None, headers=None):
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        req = urllib.request.Request(url, data=body, headers=headers or {})
        try:
            with self.opener.open(req, timeout=10) as res:
                return res.status, res.headers, res.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.headers, err.read().decode()

    def follow(self, url, data=None, stop_at=REDIRECT_URI):
        """Requests url and follows redirects until a page or stop_at.
        Returns (status, url, body, hops)."""
        hops = []
        status, headers, body = self.request(url, data)
        while status in (302, 303) and not headers["Location"].startswith(stop_at):
            url = urllib.parse.urljoin(url, headers["Location"])
            hops.append(urllib.parse.urlsplit(url).path)
            status, headers, body = self.request(url)
        if status in (302, 303):
            url = headers["Location"]
            hops.append(url.split("?")[0])
        return status, url, body, hops

    def cookie_names(self):
        return sorted({c.name for c in self.jar})


class Form(html.parser.HTMLParser):
    """The sign-in page: form action, inputs, labels, button and error texts."""

    def __init__(self, text):
        super().__init__()
        self.action = None
        self.inputs = {}
        self.labels = {}
        self.buttons = []
        self.errors = []
        self._text_for = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "form":
            self.action = attrs.get("action")
        elif tag == "input":
            self.inputs[attrs.get("name")] = attrs.get("type")
        elif tag == "label":
            self._text_for = ("label", attrs.get("for"))
        elif tag == "button":
            self._text_for = ("button", None)
        elif tag == "p" and "error" in (attrs.get("class") or ""):
            self._text_for = ("error", None)

    def handle_endtag(self, tag):
        if tag in ("label", "button", "p"):
            self._text_for = None

    def handle_data(self, data):
        if self._text_for and data.strip():
            kind, target = self._text_for
            if kind == "label":
                self.labels[target] = data.strip()
            elif kind == "button":
                self.buttons.append(data.strip())
            else:
                self.errors.append(data.strip())


def start_provider(users_path):
    env = dict(os.environ,
               OIDC_PORT="0",  # a free port; a fixed one works as well
               OIDC_CLIENT_ID=CLIENT_ID,
               OIDC_CLIENT_SECRET=CLIENT_SECRET,
               OIDC_REDIRECT_URIS=f"{REDIRECT_URI},http://localhost:3999/auth/oidc/callback",
               OIDC_USERS=users_path)
    stderr = tempfile.TemporaryFile()
    proc = subprocess.Popen(["node", os.path.join(HERE, "provider.mjs")], env=env,
                            stdout=subprocess.PIPE, stderr=stderr, text=True)
    started = time.monotonic()
    for line in proc.stdout:
        if line.startswith("oidc-provider listening on "):
            issuer = line.split()[-1]
            ok(f"started in {time.monotonic() - started:.1f}s: {line.strip()}")
            return proc, issuer, stderr
    proc.wait()
    stderr.seek(0)
    fail(f"provider.mjs exited {proc.returncode}:\n{stderr.read().decode()}")


def pkce_pair():
    verifier = b64url(secrets.token_bytes(32))
    challenge = b64url(hashlib.sha256(verifier.encode()).digest())
    return verifier, challenge


def auth_url(meta, challenge, state, nonce, **extra):
    params = {
        "response_type": "code",
        "client_id": CLIENT_ID,
        "redirect_uri": REDIRECT_URI,
        "scope": "openid email profile groups",
        "state": state,
        "nonce": nonce,
        "code_challenge": challenge,
        "code_challenge_method": "S256",  # required: no default
        **extra,
    }
    params = {k: v for k, v in params.items() if v is not None}
    return meta["authorization_endpoint"] + "?" + urllib.parse.urlencode(params)


def callback_params(url):
    expect(url.startswith(REDIRECT_URI + "?"), f"ends at the redirect_uri ({url.split('?')[0]})")
    return dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))


def token(meta, code, verifier, auth="basic"):
    data = {"grant_type": "authorization_code", "code": code,
            "redirect_uri": REDIRECT_URI, "code_verifier": verifier}
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if auth == "basic":
        # RFC 6749 2.3.1: form-encode id and secret, then base64 "id:secret".
        creds = f"{urllib.parse.quote_plus(CLIENT_ID)}:{urllib.parse.quote_plus(CLIENT_SECRET)}"
        headers["Authorization"] = "Basic " + base64.b64encode(creds.encode()).decode()
    else:
        data.update(client_id=CLIENT_ID, client_secret=CLIENT_SECRET)
    status, _, body = Browser().request(meta["token_endpoint"], data, headers)
    return status, json.loads(body)


def verify_rs256(jwt, jwks):
    """RSASSA-PKCS1-v1_5 with SHA-256, by hand: the standard library has no RSA."""
    header_b64, payload_b64, sig_b64 = jwt.split(".")
    header = json.loads(b64url_decode(header_b64))
    key = next(k for k in jwks["keys"] if k["kid"] == header["kid"])
    n = int.from_bytes(b64url_decode(key["n"]), "big")
    e = int.from_bytes(b64url_decode(key["e"]), "big")
    k = (n.bit_length() + 7) // 8
    em = pow(int.from_bytes(b64url_decode(sig_b64), "big"), e, n).to_bytes(k, "big")
    digest_info = bytes.fromhex("3031300d060960864801650304020105000420")
    digest = hashlib.sha256(f"{header_b64}.{payload_b64}".encode()).digest()
    expected = b"\x00\x01" + b"\xff" * (k - 3 - len(digest_info) - len(digest)) + b"\x00" + digest_info + digest
    return header, json.loads(b64url_decode(payload_b64)), em == expected


def sign_in(meta, issuer, browser, user, *, wrong_password_first=False, auth="basic"):
    verifier, challenge = pkce_pair()
    state, nonce = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
    status, url, body, hops = browser.follow(auth_url(meta, challenge, state, nonce))
    expect(status == 200 and "/interaction/" in url, f"GET /auth redirects to the sign-in page {hops}")
    form = Form(body)
    expect(form.labels == {"login": "Username", "password": "Password"}
           and form.inputs.get("login") == "text" and form.inputs.get("password") == "password",
           f"form fields login/password labelled {form.labels}")
    expect(form.buttons == ["Sign in"], f"submit button {form.buttons}")
    expect(form.action.endswith("/login"), f"form posts to {form.action}")
    action = urllib.parse.urljoin(url, form.action)
    names = browser.cookie_names()
    expect({"oidc_interaction", "oidc_interaction_resume"} <= set(names), f"cookies {names}")

    if wrong_password_first:
        status, _, body, _ = browser.follow(action, {"login": user["sub"], "password": "nope"})
        again = Form(body)
        expect(status == 200 and again.errors == ["Wrong username or password"]
               and again.buttons == ["Sign in"], f"a wrong password shows the form again with {again.errors}")
        status, _, body, _ = browser.follow(action, {"login": "nobody", "password": "nope"})
        expect(Form(body).errors == ["Wrong username or password"], "so does an unknown user")

    status, url, _, hops = browser.follow(action, {"login": user["sub"], "password": user["password"]})
    expect(status in (302, 303), f"POST {form.action} then redirects with no consent page: {hops}")
    params = callback_params(url)
    expect(params.get("state") == state, "state comes back")
    expect(params.get("iss") == issuer, f"iss is in the authorization response (RFC 9207): {params.get('iss')}")
    expect("code" in params, "code is in the authorization response")
    expect("oidc_session" in browser.cookie_names(), f"session cookie after sign-in {browser.cookie_names()}")

    status, tokens = token(meta, params["code"], verifier, auth)
    expect(status == 200 and tokens.get("token_type") == "Bearer" and "id_token" in tokens,
           f"code + code_verifier at /token with client_secret_{auth}: {sorted(tokens)}")
    return tokens, nonce, params["code"], verifier


def main():
    with tempfile.TemporaryDirectory() as tmp:
        users_path = os.path.join(tmp, "users.json")
        with open(users_path, "w") as f:
            json.dump(USERS, f)
        proc, issuer, stderr = start_provider(users_path)
        try:
            run(issuer)
        except BaseException:
            stderr.seek(0)
            sys.stderr.write("provider.mjs stderr:\n" + stderr.read().decode())
            raise
        finally:
            proc.terminate()
            rest = proc.stdout.read()
            proc.wait()
        # Nothing else on stdout (oidc-provider's own notices would go there).
        expect(rest == "", f"stdout has only the listening line{': ' + rest if rest else ''}")
    print("all checks passed")


def run(issuer):
    discovery = f"{issuer}/.well-known/openid-configuration"
    _, _, body = Browser().request(discovery)
    meta = json.loads(body)
    expect(meta["issuer"] == issuer, f"discovery at {discovery}")
    for key in ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri", "end_session_endpoint"):
        ok(f"  {key}: {meta[key]}")
    expect(meta["code_challenge_methods_supported"] == ["S256"], "PKCE: S256")
    expect(set(meta["token_endpoint_auth_methods_supported"]) == {"client_secret_basic", "client_secret_post"},
           f"client auth {meta['token_endpoint_auth_methods_supported']}")
    expect({"openid", "email", "profile", "groups"} <= set(meta["scopes_supported"]),
           f"scopes {meta['scopes_supported']}")
    _, _, body = Browser().request(meta["jwks_uri"])
    jwks = json.loads(body)

    # Alice: wrong password first, then client_secret_basic.
    browser = Browser()
    alice = USERS[0]
    tokens, nonce, _, _ = sign_in(meta, issuer, browser, alice, wrong_password_first=True)
    header, claims, valid = verify_rs256(tokens["id_token"], jwks)
    expect(valid and header["alg"] == "RS256", f"id_token signature verifies against /jwks ({header})")
    expect(claims["iss"] == issuer and claims["aud"] == CLIENT_ID and claims["nonce"] == nonce
           and claims["exp"] > time.time(), "id_token iss, aud, nonce, exp")
    expected = {k: alice[k] for k in ("sub", "email", "email_verified", "name", "groups")}
    expect({k: claims.get(k) for k in expected} == expected, f"id_token claims {claims}")
    _, _, body = Browser().request(meta["userinfo_endpoint"],
                                   headers={"Authorization": f"Bearer {tokens['access_token']}"})
    info = json.loads(body)
    expect(info == expected, f"userinfo {info}")
    expect(set(tokens["scope"].split()) == {"openid", "email", "profile", "groups"}, f"scope {tokens['scope']}")

    # Same browser again: the provider's session signs in without the form...
    verifier, challenge = pkce_pair()
    status, url, _, hops = browser.follow(auth_url(meta, challenge, "s2", "n2"))
    params = callback_params(url)
    expect(status in (302, 303) and "code" in params, f"a second /auth in the same browser skips the form {hops}")
    # ...unless prompt=login asks for it.
    status, url, _, _ = browser.follow(auth_url(meta, challenge, "s3", "n3", prompt="login"))
    expect(status == 200 and "/interaction/" in url, "prompt=login shows the form again")

    # Bob in a fresh browser, client_secret_post; email_verified false, no groups.
    bob = USERS[1]
    tokens, _, code, verifier = sign_in(meta, issuer, Browser(), bob, auth="post")
    _, claims, _ = verify_rs256(tokens["id_token"], jwks)
    expect(claims["sub"] == "bob" and claims["email_verified"] is False and claims["groups"] == [],
           f"bob's id_token {({k: claims[k] for k in ('sub', 'email', 'email_verified', 'groups')})}")

    # What the provider refuses.
    status, again = token(meta, code, verifier, "post")
    expect(status == 400 and again.get("error") == "invalid_grant", "a code is single use")
    status, _, body = Browser().request(meta["userinfo_endpoint"],
                                        headers={"Authorization": f"Bearer {tokens['access_token']}"})
    expect(status == 401, f"and its reuse revokes the access token it gave: {body}")
    status, url, _, _ = Browser().follow(auth_url(meta, None, "s4", "n4", code_challenge_method=None))
    params = callback_params(url)
    expect(params.get("error") == "invalid_request", f"no PKCE: {params.get('error_description')}")
    verifier, challenge = pkce_pair()
    status, url, body, _ = Browser().follow(
        auth_url(meta, challenge, "s5", "n5", redirect_uri="http://127.0.0.1:3999/elsewhere"))
    expect(status == 400 and "redirect_uri did not match" in body, "an unregistered redirect_uri gets an error page")
    browser = Browser()
    verifier, challenge = pkce_pair()
    status, url, body, _ = browser.follow(auth_url(meta, challenge, "s6", "n6"))
    action = urllib.parse.urljoin(url, Form(body).action)
    status, url, _, _ = browser.follow(action, {"login": "alice", "password": "alice-pw"})
    status, tokens = token(meta, callback_params(url)["code"], pkce_pair()[0])
    expect(status == 400 and tokens["error"] == "invalid_grant", f"a wrong code_verifier: {tokens}")


if __name__ == "__main__":
    main()
