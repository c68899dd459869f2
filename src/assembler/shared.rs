//! A presented message shared between the assembly cache and the results built
//! from it, with its JSON text kept once it has been written.
//!
//! Most of a turn's context is the previous turn's: the same messages, unchanged.
//! Sharing them spares the copy; keeping their JSON text spares serializing them
//! again on every turn (the text is written the first time a result holding the
//! message is serialized, and copied verbatim afterwards). Changing a message
//! goes through [`SharedMessage::make_mut`], which copies it first when shared and
//! forgets the text, so the text always says what the value says.

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

/// A message as presented; cheap to clone (shares the value and its text).
#[derive(Debug, Clone)]
pub struct SharedMessage(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    value: Value,
    /// `value` as JSON text, once written.
    json: OnceLock<Box<RawValue>>,
}

impl Clone for Inner {
    /// A copy to change: the value without its text.
    fn clone(&self) -> Inner {
        Inner::new(self.value.clone())
    }
}

impl Inner {
    fn new(value: Value) -> Inner {
        Inner {
            value,
            json: OnceLock::new(),
        }
    }
}

impl SharedMessage {
    /// Wraps a message.
    pub fn new(value: Value) -> SharedMessage {
        SharedMessage(Arc::new(Inner::new(value)))
    }

    /// The message to change: copied first when shared, its JSON text dropped.
    /// Call it only once a change is certain.
    pub fn make_mut(&mut self) -> &mut Value {
        let inner = Arc::make_mut(&mut self.0);
        inner.json.take();
        &mut inner.value
    }

    /// The message's JSON text, written on first use.
    fn json(&self) -> serde_json::Result<&RawValue> {
        if let Some(text) = self.0.json.get() {
            return Ok(text);
        }
        let text = serde_json::value::to_raw_value(&self.0.value)?;
        Ok(self.0.json.get_or_init(|| text))
    }
}

impl Deref for SharedMessage {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.0.value
    }
}

impl PartialEq for SharedMessage {
    fn eq(&self, other: &SharedMessage) -> bool {
        self.0.value == other.0.value
    }
}

impl From<Value> for SharedMessage {
    fn from(value: Value) -> SharedMessage {
        SharedMessage::new(value)
    }
}

impl Serialize for SharedMessage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.json() {
            Ok(text) => text.serialize(s),
            // Unreachable for a `Value` (its keys are strings); serialize it directly.
            Err(_) => self.0.value.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_text_follows_every_change() {
        let mut a = SharedMessage::new(json!({"role": "user", "content": "é 👋"}));
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            r#"{"role":"user","content":"é 👋"}"#
        );
        let b = a.clone();
        a.make_mut()["content"] = json!("changed");
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            r#"{"role":"user","content":"changed"}"#
        );
        // The shared copy keeps its value and its text.
        assert_eq!(
            serde_json::to_string(&b).unwrap(),
            r#"{"role":"user","content":"é 👋"}"#
        );
        // Changing the only owner also drops the text it had.
        let mut c = b;
        c.make_mut()["role"] = json!("assistant");
        assert_eq!(
            serde_json::to_string(&c).unwrap(),
            r#"{"role":"assistant","content":"é 👋"}"#
        );
    }

    #[test]
    fn serializes_alike_inside_a_result_and_as_a_value() {
        let m =
            SharedMessage::new(json!({"role": "user", "content": [{"type": "text", "text": "x"}]}));
        let v = vec![m.clone(), m];
        let text = serde_json::to_string(&v).unwrap();
        assert_eq!(text, serde_json::to_string(&vec![&*v[0], &*v[1]]).unwrap());
        assert_eq!(serde_json::to_value(&v).unwrap(), json!([*v[0], *v[1]]));
    }
}
