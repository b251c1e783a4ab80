//! Standard Webhooks signing (docs/api.md "Webhooks", "Delivery"): an endpoint's secret is
//! `whsec_` then 24 random bytes, base64 ([`new_secret`], made by `outcomes webhooks add`); each attempt
//! is signed with it ([`sign`], by the delivery worker).

use base64::Engine as _;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

/// A new signing secret: `whsec_` then 24 random bytes, base64.
pub fn new_secret() -> String {
    let mut bytes = [0u8; 24];
    rand::rng().fill_bytes(&mut bytes);
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

/// The Standard Webhooks signature of one attempt: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`,
/// keyed with the base64-decoded part of the `whsec_` secret.
pub fn sign(secret: &str, msg_id: &str, timestamp: i64, body: &[u8]) -> Result<String, String> {
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret.strip_prefix("whsec_").unwrap_or(secret))
        .map_err(|_| "the stored secret is not base64".to_owned())?;
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).map_err(|e| e.to_string())?;
    mac.update(msg_id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    Ok(format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_follow_standard_webhooks() {
        // The example of the Standard Webhooks specification (spec/standard-webhooks.md).
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = br#"{"test": 2432232314}"#;
        let sig = sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body).unwrap();
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }
}
