//! A directory people sign in against with a username and password (LDAP):
//! it checks them and says who the person is.

use async_trait::async_trait;

use crate::error::AppError;
use crate::models::sign_in::{ExternalIdentity, SignInMapping};

/// Checks a username and password against the directory.
#[async_trait]
pub trait Directory: Send + Sync {
    /// Who `username` is, if `password` is theirs (else
    /// [`AppError::BadCredentials`]), with their address and groups.
    async fn authenticate(
        &self,
        username: &str,
        password: &str,
    ) -> Result<ExternalIdentity, AppError>;
    /// How its people become members.
    fn mapping(&self) -> &SignInMapping;
}
