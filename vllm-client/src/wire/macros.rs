//! One declaration per wire struct: the field list is the protocol.
//!
//! `wire_array!` declares a struct that vLLM encodes `array_like` (fields in order, all
//! of them); `wire_map!` one that it encodes as a map keyed by field name, in one of
//! three modes: `all` (dataclasses: every field), `omit_defaults` (msgspec structs: the
//! fields equal to their Python default are left out; header size below), or `sparse`
//! (plain dicts with optional keys: defaults left out, smallest header). Each macro emits
//! the struct, its `Default`, a `FIELDS` constant with the wire names in order (checked
//! against vLLM's Python source by the drift check), the `Encode` / `Decode`
//! implementations (msgpack, field order), and `serde::Serialize` / `Deserialize`
//! derives (field names: the wire name where one is given, so JSON says `_eos_token_id`
//! like vLLM's object; `#[serde(default)]`, so missing fields take their defaults as on
//! the wire). A tagged struct's serde form carries the tag too (`"type": "Name"` first,
//! `#[serde(tag)]`), like its msgpack form. `wire_int_enum!` enums serialize as the
//! integer vLLM sends.
//!
//! msgspec reserves an `omit_defaults` struct's map header before it knows the count, so
//! the header's size follows the number of fields the struct *could* write: a fixmap
//! below 16, else a map16 (even for 1 entry). A `tag = "Name"` after the mode declares a
//! msgspec tagged struct (`tag=True`): the tag entry `"type": "Name"` comes first and
//! counts as a field; decoding checks it when present.
//!
//! Field syntax: `pub name: Type = default`, optionally followed by `=> "wire_name"` when
//! the Python name differs (private fields such as `_eos_token_id`), and by `; always`
//! for an `omit_defaults` field that vLLM always puts on the wire (lists that
//! `__post_init__` turns from `None` into `[]`).

/// The wire name of a field: the explicit one if given, else the Rust name.
macro_rules! wire_name {
    ($field:ident) => {
        stringify!($field)
    };
    ($field:ident $wire:literal) => {
        $wire
    };
}

/// Whether an `omit_defaults` field is always written.
macro_rules! wire_always {
    () => {
        false
    };
    (always) => {
        true
    };
}

macro_rules! wire_array {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                pub $field:ident : $ty:ty = $default:expr
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, ::serde::Serialize, ::serde::Deserialize)]
        #[serde(default)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $name {
            /// The wire field names, in vLLM's declaration order.
            pub const FIELDS: &'static [&'static str] = &[$(stringify!($field)),*];
        }

        impl Default for $name {
            fn default() -> Self {
                Self { $( $field: $default, )* }
            }
        }

        impl $crate::wire::Encode for $name {
            fn encode(&self, w: &mut $crate::wire::Writer) {
                w.array_len(Self::FIELDS.len());
                $( $crate::wire::Encode::encode(&self.$field, w); )*
            }
        }

        impl $name {
            /// Reads the array elements numbered `fields` into their fields; elements
            /// past the declared fields (a newer peer's) are skipped. The reader must be
            /// at element `fields.start`. Decoding a whole struct reads `0..len`; a
            /// caller that reads some element its own way reads the ranges around it.
            #[allow(dead_code)] // Not every wire struct is read piecewise.
            pub(crate) fn decode_fields(
                &mut self,
                r: &mut $crate::wire::Reader<'_>,
                fields: ::std::ops::Range<usize>,
            ) -> Result<(), $crate::wire::DecodeError> {
                let mut i = 0usize;
                $(
                    if fields.contains(&i) {
                        self.$field = $crate::wire::Decode::decode(r)?;
                    }
                    i += 1;
                )*
                for _ in i.max(fields.start)..fields.end {
                    r.skip()?;
                }
                Ok(())
            }
        }

        impl $crate::wire::Decode for $name {
            fn decode(
                r: &mut $crate::wire::Reader<'_>,
            ) -> Result<Self, $crate::wire::DecodeError> {
                // Shorter arrays (older peers) leave trailing fields at their defaults;
                // longer ones (newer peers) have their unknown trailing fields skipped.
                let len = r.array()?;
                let mut value = Self::default();
                value.decode_fields(r, 0..len)?;
                r.leave();
                Ok(value)
            }
        }
    };
}

/// The position of `name` in a wire struct's `FIELDS`, for code that reads one element of
/// an array-like struct by itself. Evaluated in a `const`, a missing name fails the build.
pub(crate) const fn field_index(fields: &[&str], name: &str) -> usize {
    let mut i = 0;
    while i < fields.len() {
        let (a, b) = (fields[i].as_bytes(), name.as_bytes());
        if a.len() == b.len() {
            let mut k = 0;
            while k < a.len() && a[k] == b[k] {
                k += 1;
            }
            if k == a.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("no such wire field")
}

macro_rules! wire_map {
    (
        $(#[$meta:meta])*
        pub struct $name:ident ($mode:ident $(, tag = $tag:literal)?) {
            $(
                $(#[$fmeta:meta])*
                pub $field:ident : $ty:ty = $default:expr $(=> $wire:literal)? $(; $always:ident)?
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, ::serde::Serialize, ::serde::Deserialize)]
        #[serde(default)]
        $(#[serde(tag = "type", rename = $tag)])?
        pub struct $name {
            $( $(#[$fmeta])* $(#[serde(rename = $wire)])? pub $field: $ty, )*
        }

        impl $name {
            /// The wire field names, in vLLM's declaration order.
            pub const FIELDS: &'static [&'static str] = &[$(wire_name!($field $($wire)?)),*];
            /// The msgspec tag of this struct (`tag=True`: the class name), if it has one.
            pub const TAG: Option<&'static str> = wire_map!(@tag $($tag)?);
        }

        impl Default for $name {
            fn default() -> Self {
                Self { $( $field: $default, )* }
            }
        }

        impl $crate::wire::Encode for $name {
            fn encode(&self, w: &mut $crate::wire::Writer) {
                #[allow(unused_variables)] // A struct without fields never reads it.
                let (omit_defaults, reserved_header) = wire_map!(@mode $mode);
                let present: &[bool] = &[$(
                    !omit_defaults || wire_always!($($always)?) || {
                        let default: $ty = $default;
                        self.$field != default
                    }
                ),*];
                let tagged = Self::TAG.is_some() as usize;
                let len = tagged + present.iter().filter(|p| **p).count();
                if reserved_header && Self::FIELDS.len() + tagged >= 16 {
                    w.map16_len(len);
                } else {
                    w.map_len(len);
                }
                if let Some(tag) = Self::TAG {
                    w.str($crate::wire::TAG_FIELD);
                    w.str(tag);
                }
                #[allow(unused_mut, unused_variables)]
                let mut i = 0usize;
                $(
                    if present[i] {
                        w.str(wire_name!($field $($wire)?));
                        $crate::wire::Encode::encode(&self.$field, w);
                    }
                    i += 1;
                )*
                let _ = i;
            }
        }

        impl $crate::wire::Decode for $name {
            fn decode(
                r: &mut $crate::wire::Reader<'_>,
            ) -> Result<Self, $crate::wire::DecodeError> {
                // Missing keys take their defaults; unknown keys are skipped.
                let len = r.map()?;
                #[allow(unused_mut)]
                let mut value = Self::default();
                #[allow(unused_labels)]
                'entries: for _ in 0..len {
                    let key = r.str()?;
                    if let Some(tag) = Self::TAG {
                        if key == $crate::wire::TAG_FIELD {
                            let found = r.str()?;
                            if found != tag {
                                return Err($crate::wire::DecodeError::Invalid {
                                    what: stringify!($name),
                                    detail: format!("tag {found:?}, expected {tag:?}"),
                                });
                            }
                            continue;
                        }
                    }
                    $(
                        if key == wire_name!($field $($wire)?) {
                            value.$field = $crate::wire::Decode::decode(r)?;
                            continue 'entries;
                        }
                    )*
                    r.skip()?;
                }
                r.leave();
                Ok(value)
            }
        }
    };
    (@tag) => { None };
    (@tag $tag:literal) => { Some($tag) };
    (@mode omit_defaults) => { (true, true) };
    (@mode sparse) => { (true, false) };
    (@mode all) => { (false, false) };
}

/// Defines a protocol enum carried as an integer on the wire.
macro_rules! wire_int_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $value:literal ),* $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant = $value, )*
        }

        impl $name {
            /// The integer vLLM puts on the wire.
            pub fn as_int(self) -> i64 {
                self as i64
            }

            /// The variant for a wire integer.
            pub fn from_int(v: i64) -> Option<Self> {
                match v {
                    $( $value => Some(Self::$variant), )*
                    _ => None,
                }
            }
        }

        impl $crate::wire::Encode for $name {
            fn encode(&self, w: &mut $crate::wire::Writer) {
                w.int(self.as_int())
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_i64(self.as_int())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $name {
            fn deserialize<D: ::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let v = <i64 as ::serde::Deserialize>::deserialize(d)?;
                Self::from_int(v).ok_or_else(|| {
                    $crate::wire::invalid(stringify!($name), format_args!("unknown value {v}"))
                })
            }
        }

        impl $crate::wire::Decode for $name {
            fn decode(
                r: &mut $crate::wire::Reader<'_>,
            ) -> Result<Self, $crate::wire::DecodeError> {
                let v: i64 = r.int()?;
                Self::from_int(v).ok_or_else(|| $crate::wire::DecodeError::Invalid {
                    what: stringify!($name),
                    detail: format!("unknown value {v}"),
                })
            }
        }
    };
}
