//! A small, bounded reader of the protobuf wire format: just enough to walk a SentencePiece
//! `.model` file (`ModelProto`) field by field.
//!
//! The input is untrusted: every length is checked against the bytes that remain, varints
//! are at most ten bytes, nested messages are read as sub-slices (no recursion beyond what
//! the caller does), and nothing panics. Unknown fields are skipped, as protobuf requires.

use crate::error::{Error, Result};

/// A field's value, by wire type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value<'a> {
    /// Wire type 0: an integer, a bool or an enum.
    Varint(u64),
    /// Wire type 1: a fixed 64-bit value (`double`, `fixed64`).
    Fixed64(u64),
    /// Wire type 2: a string, bytes or a nested message.
    Bytes(&'a [u8]),
    /// Wire type 5: a fixed 32-bit value (`float`, `fixed32`).
    Fixed32(u32),
}

/// Iterates over the `(field number, value)` pairs of one message.
pub(crate) struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader over the bytes of one message.
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    fn malformed(what: &str) -> Error {
        Error::Tokenizer(format!("malformed protobuf: {what}"))
    }

    fn varint(&mut self) -> Result<u64> {
        let mut value: u64 = 0;
        for (i, &byte) in self.data.iter().enumerate().take(10) {
            value |= u64::from(byte & 0x7F) << (7 * i);
            if byte & 0x80 == 0 {
                self.data = &self.data[i + 1..];
                return Ok(value);
            }
        }
        Err(Self::malformed("truncated or overlong varint"))
    }

    fn take(&mut self, len: usize) -> Result<&'a [u8]> {
        if len > self.data.len() {
            return Err(Self::malformed("length past the end of the message"));
        }
        let (head, rest) = self.data.split_at(len);
        self.data = rest;
        Ok(head)
    }

    /// The next field, or `None` at the end of the message.
    pub(crate) fn next_field(&mut self) -> Result<Option<(u64, Value<'a>)>> {
        if self.data.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let field = key >> 3;
        let value = match key & 7 {
            0 => Value::Varint(self.varint()?),
            1 => {
                let bytes = self.take(8)?;
                Value::Fixed64(u64::from_le_bytes(bytes.try_into().unwrap_or_default()))
            }
            2 => {
                let len = usize::try_from(self.varint()?)
                    .map_err(|_| Self::malformed("length does not fit in memory"))?;
                Value::Bytes(self.take(len)?)
            }
            5 => {
                let bytes = self.take(4)?;
                Value::Fixed32(u32::from_le_bytes(bytes.try_into().unwrap_or_default()))
            }
            _ => return Err(Self::malformed("unsupported wire type (groups)")),
        };
        Ok(Some((field, value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(data: &[u8]) -> Result<Vec<(u64, Value<'_>)>> {
        let mut reader = Reader::new(data);
        let mut out = Vec::new();
        while let Some(field) = reader.next_field()? {
            out.push(field);
        }
        Ok(out)
    }

    #[test]
    fn reads_each_wire_type() {
        // field 1 varint 300, field 2 bytes "hi", field 3 float 1.0, field 4 fixed64 7.
        let data = [
            0x08, 0xAC, 0x02, 0x12, 0x02, b'h', b'i', 0x1D, 0x00, 0x00, 0x80, 0x3F, 0x21, 7, 0, 0,
            0, 0, 0, 0, 0,
        ];
        assert_eq!(
            fields(&data).unwrap(),
            vec![
                (1, Value::Varint(300)),
                (2, Value::Bytes(b"hi")),
                (3, Value::Fixed32(1.0f32.to_bits())),
                (4, Value::Fixed64(7)),
            ]
        );
    }

    #[test]
    fn rejects_malformed_input() {
        for data in [
            &[0x08][..],         // varint value missing
            &[0x08, 0x80],       // truncated varint
            &[0x12, 0x05, b'a'], // length past the end
            &[
                0x12, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01,
            ], // huge length
            &[0x0B],             // group
            &[0x1D, 0x00],       // truncated fixed32
            &[
                0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01,
            ], // 11 bytes
        ] {
            assert!(fields(data).is_err(), "{data:?}");
        }
        assert_eq!(fields(&[]).unwrap(), vec![]);
    }
}
