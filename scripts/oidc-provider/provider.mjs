// A real OpenID Connect provider for the console's tests: panva's certified
// oidc-provider with one confidential client, users from a JSON file, and a
// sign-in page of its own (consent is granted without a page).
//
//   OIDC_PORT            listen on 127.0.0.1:PORT; the issuer is http://127.0.0.1:PORT
//                        (0: a free port, the one printed below)
//   OIDC_CLIENT_ID       the one client, authorization_code + response_type code,
//   OIDC_CLIENT_SECRET   client_secret_basic or client_secret_post, PKCE (S256) required
//   OIDC_REDIRECT_URIS   comma separated
//   OIDC_POST_LOGOUT_REDIRECT_URIS  optional, comma separated (RP-initiated logout)
//   OIDC_USERS           path to a JSON file:
//                        [{"sub":"alice","password":"...","email":"alice@example.org",
//                          "email_verified":true,"name":"Alice","groups":["ml-team"]}]
//
// Prints `oidc-provider listening on http://127.0.0.1:PORT` when ready.
// scripts/oidc-provider/check.py walks through the flow a client follows.
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';

// oidc-provider 8 (package.json) runs on Node.js 18 or later, so on the
// Node.js 18 that Debian bookworm's `apt install nodejs` gives (9 would need
// 20.18+ for URL.parse). So that an older Node.js gets this message rather
// than a SyntaxError, oidc-provider is imported only after the check (below,
// dynamically) and this file keeps to syntax Node.js 12 parses: no `??`, `?.`
// or top-level await.
if (Number(process.versions.node.split('.')[0]) < 18) {
  console.error(`provider.mjs: Node.js ${process.version} is too old for oidc-provider, 18 or later is needed`);
  process.exit(2);
}

function env(name, fallback) {
  const value = process.env[name] !== undefined ? process.env[name] : fallback;
  if (value === undefined || value === '') {
    console.error(`provider.mjs: ${name} must be set`);
    process.exit(2);
  }
  return value;
}

const list = (value) => value.split(',').map((s) => s.trim()).filter(Boolean);

const port = Number(env('OIDC_PORT'));
const clientId = env('OIDC_CLIENT_ID');
const clientSecret = env('OIDC_CLIENT_SECRET');
const redirectUris = list(env('OIDC_REDIRECT_URIS'));
const postLogoutRedirectUris = list(process.env.OIDC_POST_LOGOUT_REDIRECT_URIS || '');
const users = new Map(
  JSON.parse(fs.readFileSync(env('OIDC_USERS'), 'utf8')).map((user) => [String(user.sub), user]),
);

const escape = (value) => String(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title, body) {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)}</title>
<style>body{font-family:sans-serif;max-width:22rem;margin:3rem auto}label,input,button{display:block;margin:.3rem 0}input{width:100%}.error{color:#b00020}</style>
</head>
<body>
${body}
</body>
</html>
`;
}

function loginPage(uid, { login = '', error } = {}) {
  return page('Sign in', `<h1>Sign in</h1>
${error ? `<p class="error" role="alert">${escape(error)}</p>\n` : ''}<form method="post" action="/interaction/${escape(uid)}/login" autocomplete="off">
<label for="login">Username</label>
<input id="login" name="login" type="text" value="${escape(login)}" required autofocus>
<label for="password">Password</label>
<input id="password" name="password" type="password" required>
<button type="submit">Sign in</button>
</form>`);
}

// An RSA key made at each start: ID tokens are RS256 with it, /jwks publishes it.
const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const jwk = {
  ...privateKey.export({ format: 'jwk' }), kid: crypto.randomUUID(), use: 'sig', alg: 'RS256',
};

const configuration = {
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    redirect_uris: redirectUris,
    post_logout_redirect_uris: postLogoutRedirectUris,
    grant_types: ['authorization_code'],
    response_types: ['code'],
    // client_secret_post is accepted as well for a client registered with
    // client_secret_basic (oidc-provider treats the two as one).
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  clientAuthMethods: ['client_secret_basic', 'client_secret_post'],
  responseTypes: ['code'],
  scopes: ['openid'],
  jwks: { keys: [jwk] },
  cookies: {
    keys: [crypto.randomBytes(32).toString('base64url')],
    // SameSite=Lax for all of them (oidc-provider 9's default; 8 makes the
    // session and resume cookies SameSite=None, which browsers drop without
    // Secure on http, plus a `.legacy` copy of each).
    long: { httpOnly: true, sameSite: 'lax' },
    short: { httpOnly: true, sameSite: 'lax' },
    // Cookies ignore the port: these share 127.0.0.1 with the console's own.
    names: {
      session: 'oidc_session',
      interaction: 'oidc_interaction',
      resume: 'oidc_interaction_resume',
    },
  },
  // Each key is a scope, its claims what the scope grants.
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name'],
    groups: ['groups'],
  },
  // The granted claims go into the ID token too, not only into userinfo.
  conformIdTokenClaims: false,
  pkce: { required: () => true },
  features: {
    devInteractions: { enabled: false },
    userinfo: { enabled: true },
    rpInitiatedLogout: {
      enabled: true,
      async logoutSource(ctx, form) {
        ctx.body = page('Sign out', `<h1>Sign out</h1>
${form}
<button type="submit" form="op.logoutForm" value="yes" name="logout">Yes, sign me out</button>
<button type="submit" form="op.logoutForm">No, stay signed in</button>`);
      },
      async postLogoutSuccessSource(ctx) {
        ctx.body = page('Signed out', '<h1>Signed out</h1>');
      },
    },
  },
  async findAccount(_ctx, sub) {
    const user = users.get(sub);
    if (!user) return undefined;
    return {
      accountId: sub,
      async claims() {
        return {
          sub,
          email: user.email,
          email_verified: user.email_verified,
          name: user.name,
          groups: user.groups != null ? user.groups : [],
        };
      },
    };
  },
  async renderError(ctx, out) {
    ctx.type = 'html';
    ctx.body = page('Error', `<h1>Error</h1>
${Object.entries(out).map(([key, value]) => `<p><strong>${escape(key)}</strong>: ${escape(value)}</p>`).join('\n')}`);
  },
  ttl: {
    AccessToken: 600,
    AuthorizationCode: 60,
    ClientCredentials: 600,
    IdToken: 600,
    Interaction: 600,
    Session: 3600,
    Grant: 3600,
    DeviceCode: 600,
    BackchannelAuthenticationRequest: 600,
    RefreshToken: 3600,
  },
};

async function readForm(req) {
  let body = '';
  for await (const chunk of req) {
    body += chunk;
    if (body.length > 64 * 1024) throw new Error('form too large');
  }
  return new URLSearchParams(body);
}

function send(res, status, html) {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
  res.end(html);
}

// GET /interaction/:uid shows the sign-in form (prompt login) or grants what
// the client asked for (prompt consent); POST /interaction/:uid/login checks
// the password.
async function interaction(provider, req, res) {
  const path = new URL(req.url, 'http://x').pathname;
  const details = await provider.interactionDetails(req, res);
  const { uid, prompt, params } = details;

  if (req.method === 'POST' && path === `/interaction/${uid}/login`) {
    if (prompt.name !== 'login') return send(res, 400, page('Error', '<p>Not a sign-in step.</p>'));
    const form = await readForm(req);
    const login = form.get('login') || '';
    const user = users.get(login);
    if (!user || typeof user.password !== 'string' || form.get('password') !== user.password) {
      return send(res, 200, loginPage(uid, { login, error: 'Wrong username or password' }));
    }
    return provider.interactionFinished(req, res, { login: { accountId: login } }, {
      mergeWithLastSubmission: false,
    });
  }

  if (req.method === 'GET' && path === `/interaction/${uid}`) {
    if (prompt.name === 'login') return send(res, 200, loginPage(uid));
    if (prompt.name === 'consent') {
      // Consent without a page: grant every scope and claim asked for.
      const grant = details.grantId
        ? await provider.Grant.find(details.grantId)
        : new provider.Grant({ accountId: details.session.accountId, clientId: params.client_id });
      const { missingOIDCScope, missingOIDCClaims, missingResourceScopes } = prompt.details;
      if (missingOIDCScope) grant.addOIDCScope(missingOIDCScope.join(' '));
      if (missingOIDCClaims) grant.addOIDCClaims(missingOIDCClaims);
      for (const [indicator, scopes] of Object.entries(missingResourceScopes || {})) {
        grant.addResourceScope(indicator, scopes.join(' '));
      }
      const grantId = await grant.save();
      const consent = details.grantId ? {} : { grantId };
      return provider.interactionFinished(req, res, { consent }, { mergeWithLastSubmission: true });
    }
  }
  return send(res, 404, page('Not found', '<p>Not found.</p>'));
}

let handler;
const server = http.createServer((req, res) => {
  if (handler) return handler(req, res);
  res.writeHead(503).end();
  return undefined;
});
import('oidc-provider').then(({ default: Provider, errors }) => {
  server.listen(port, '127.0.0.1', () => {
    const issuer = `http://127.0.0.1:${server.address().port}`;
    const provider = new Provider(issuer, configuration);
    for (const event of ['server_error', 'authorization.error', 'grant.error', 'userinfo.error', 'end_session.error']) {
      provider.on(event, (_ctx, err) => console.error(`oidc-provider ${event}: ${err.message}${err.error_description ? ` (${err.error_description})` : ''}`));
    }
    const callback = provider.callback();
    handler = (req, res) => {
      if (!req.url.startsWith('/interaction/')) return callback(req, res);
      return interaction(provider, req, res).catch((err) => {
        if (err instanceof errors.SessionNotFound) {
          return send(res, 400, page('Error', '<p>The sign-in has expired or was already used: start again from the application.</p>'));
        }
        console.error('oidc-provider interaction error:', err);
        return send(res, 500, page('Error', '<p>Internal error.</p>'));
      });
    };
    console.log(`oidc-provider listening on ${issuer}`);
  });
}, (err) => {
  console.error('provider.mjs: cannot load oidc-provider (npm ci in scripts/oidc-provider):', err);
  process.exit(2);
});

for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0));
