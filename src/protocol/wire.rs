//! How the protocol's typed fields keep the first wire format: a
//! [`CallOutcome`] also as `"ok"`, an optional
//! [`Mandate`] also as a `true`/`false` flag, and lines in
//! the first format read back.

#[cfg(doc)]
use super::{CallOutcome, Mandate};

/// [`CallOutcome`] as `"ok": bool` and `"outcome"`; a line with only
/// `ok` (the first format) reads as ok or failed.
pub mod outcome {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::super::CallOutcome;

    #[derive(Serialize, Deserialize)]
    struct Wire {
        ok: bool,
        #[serde(default)]
        outcome: Option<CallOutcome>,
    }

    #[expect(
        clippy::trivially_copy_pass_by_ref,
        reason = "serde's `with` passes a reference"
    )]
    pub fn serialize<S: Serializer>(outcome: &CallOutcome, to: S) -> Result<S::Ok, S::Error> {
        Wire {
            ok: outcome.ok(),
            outcome: Some(*outcome),
        }
        .serialize(to)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(from: D) -> Result<CallOutcome, D::Error> {
        let wire = Wire::deserialize(from)?;
        Ok(wire.outcome.unwrap_or(if wire.ok {
            CallOutcome::Ok
        } else {
            CallOutcome::Failed
        }))
    }
}

/// An optional [`Mandate`] as `"<flag>": bool` (the first format's
/// field) and `"mandate"` when there is one.
macro_rules! mandate_wire {
    ($module:ident, $flag:literal) => {
        #[doc = concat!("An optional [`Mandate`] as `\"", $flag, "\": bool` and `\"mandate\"`.")]
        pub mod $module {
            use serde::{Deserialize, Deserializer, Serialize, Serializer};

            use super::super::Mandate;

            #[derive(Serialize, Deserialize)]
            struct Wire {
                #[serde(rename = $flag, default)]
                flag: bool,
                #[serde(default, skip_serializing_if = "Option::is_none")]
                mandate: Option<Mandate>,
            }

            /// Writes the flag and the mandate.
            #[allow(
                clippy::ref_option,
                reason = "serde's `with` passes a reference (linted only where not re-exported)"
            )]
            pub fn serialize<S: Serializer>(
                mandate: &Option<Mandate>,
                to: S,
            ) -> Result<S::Ok, S::Error> {
                Wire {
                    flag: mandate.is_some(),
                    mandate: *mandate,
                }
                .serialize(to)
            }

            /// Reads the mandate, or a first-format flag.
            pub fn deserialize<'de, D: Deserializer<'de>>(
                from: D,
            ) -> Result<Option<Mandate>, D::Error> {
                let wire = Wire::deserialize(from)?;
                // A first-format `true` came from the managed policy.
                Ok(wire.mandate.or(wire.flag.then_some(Mandate::ManagedPolicy)))
            }
        }
    };
}
mandate_wire!(mandatory, "mandatory");
mandate_wire!(managed, "managed");
