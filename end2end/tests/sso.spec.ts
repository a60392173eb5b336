import { expect } from "@playwright/test";
import { test } from "./fixtures";

// A console set up for single sign-on with a real OpenID Connect provider
// (and, where slapd is installed, a real LDAP directory): see
// global-setup.ts's startSingleSignOn.
const ssoUrl = process.env.PADDLECLOUD_SSO_URL;

test.describe("single sign-on", () => {
  test.skip(!ssoUrl, "no identity provider installed (scripts/setup.sh test)");
  test.use({ baseURL: ssoUrl });

  test("someone signs in through the identity provider and lands in the account its groups map to", async ({ page, open }) => {
    await open("/jobs");
    // Signed out: the sign-in page, with the provider's button.
    await expect(page).toHaveURL(/\/login\?next=/);
    await page.getByRole("link", { name: "Sign in with Example IdP" }).click();
    // The provider's own login form.
    await expect(page.getByRole("button", { name: "Sign in" })).toBeVisible();
    expect(new URL(page.url()).origin).not.toBe(new URL(ssoUrl!).origin);
    await page.getByLabel("Username", { exact: true }).fill("alice");
    await page.getByLabel("Password", { exact: true }).fill("alice-pw");
    await page.getByRole("button", { name: "Sign in" }).click();
    // Back at the console, signed in where she asked to go.
    await expect(page).toHaveURL(/\/jobs$/);
    await expect(page.locator(".user-menu .account-name")).toHaveText("vision");
    await expect(page.locator(".user-menu .email")).toHaveText("alice@example.org");
    await expect(page.locator(".user-menu .role")).toHaveText("owner of vision");
  });

  test("someone in no mapped group is told why and sent nowhere", async ({ page }) => {
    await page.goto("/login");
    await page.getByRole("link", { name: "Sign in with Example IdP" }).click();
    await page.getByLabel("Username", { exact: true }).fill("carol");
    await page.getByLabel("Password", { exact: true }).fill("carol-pw");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect(page.getByTestId("sso-error")).toContainText("none of your groups gives you an account");
    await page.getByRole("link", { name: "Back to sign in" }).click();
    await expect(page.getByRole("heading", { level: 1 })).toHaveText("Sign in to PaddleCloud");
  });

  test("someone signs in with their directory password", async ({ page, open }) => {
    test.skip(!process.env.PADDLECLOUD_SSO_LDAP, "no slapd installed (scripts/setup.sh test)");
    await open("/login");
    const form = page.getByTestId("directory-form");
    await form.getByLabel("Username", { exact: true }).fill("bob");
    await form.getByLabel("Directory password", { exact: true }).fill("wrong");
    await form.getByRole("button", { name: "Sign in with Example LDAP" }).click();
    await expect(page.getByTestId("directory-form").getByRole("alert")).toBeVisible();
    await page.getByTestId("directory-form").getByLabel("Username", { exact: true }).fill("bob");
    await page.getByTestId("directory-form").getByLabel("Directory password", { exact: true }).fill("bob-pass");
    await page.getByTestId("directory-form").getByRole("button", { name: "Sign in with Example LDAP" }).click();
    await expect(page).toHaveURL(/\/jobs/);
    await expect(page.locator(".user-menu .role")).toHaveText("member of vision");
  });
});
