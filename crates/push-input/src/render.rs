//! Typed values as bytes: how a Parquet (Arrow) value becomes the text of a string or hash
//! field, or a JSON value. One rendering for every place a typed value is written, so a
//! column reads the same whether it is a push's only value, a hash field or a JSON member.
//!
//! | type | text | JSON |
//! |---|---|---|
//! | string | its bytes | string |
//! | binary | its bytes | string, base64 (RFC 4648, padded) |
//! | integer | decimal | number |
//! | float | shortest round-trip, as JavaScript writes numbers: `1.5`, `3`, `1e+21`, `1e-7`; `NaN`, `inf`, `-inf` | number; `"NaN"`, `"inf"`, `"-inf"` as strings |
//! | boolean | `true` / `false` | `true` / `false` |
//! | decimal | exact, every digit of its scale: `12.30`, `-0.05`, `1200` | string, as the text |
//! | date | `YYYY-MM-DD` | string |
//! | time | `HH:MM:SS` with the unit's digits (`.fff`, `.ffffff`, `.fffffffff`) | string |
//! | timestamp | RFC 3339 with the unit's digits: `2024-05-01T12:00:00.250Z`; `Z` only with a time zone (an instant, shown in UTC); none without (a wall-clock time) | string |
//! | list | its JSON | array |
//! | struct | its JSON | object, fields in order |
//! | map | its JSON | object; a key that is not a string is its text (`{"1": ...}`) |
//! | null | (see the push's `nulls`) | `null` (inside lists, structs and maps always) |
//!
//! Floats: the digits are the fewest that read back as the same value (Rust's shortest
//! formatting), laid out as ECMAScript's `Number.prototype.toString` lays them: no exponent
//! from 1e-6 up to 1e21, a whole number without `.0`, `-0` kept. Every language's float
//! parser reads it. A 16-bit float is shown as the 32-bit float it converts to exactly.

use std::io::Write as _;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Decimal256Type, Decimal32Type, Decimal64Type,
    Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    Time32MillisecondType, Time32SecondType, Time64MicrosecondType, Time64NanosecondType,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{
    Array, ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, FixedSizeBinaryArray,
    LargeBinaryArray, LargeStringArray, PrimitiveArray, StringArray, StringViewArray,
};
use arrow_schema::{DataType, TimeUnit};
use base64::Engine as _;

/// Whether values of `dt` can be rendered (checked when a file is opened, so that a batch
/// never holds a type [`Col::new`] refuses).
pub(crate) fn supported(dt: &DataType) -> bool {
    use DataType::*;
    match dt {
        Null
        | Boolean
        | Int8
        | Int16
        | Int32
        | Int64
        | UInt8
        | UInt16
        | UInt32
        | UInt64
        | Float16
        | Float32
        | Float64
        | Utf8
        | LargeUtf8
        | Utf8View
        | Binary
        | LargeBinary
        | BinaryView
        | FixedSizeBinary(_)
        | Date32
        | Date64
        | Time32(_)
        | Time64(_)
        | Timestamp(_, _)
        | Decimal32(_, _)
        | Decimal64(_, _)
        | Decimal128(_, _)
        | Decimal256(_, _) => true,
        List(f) | LargeList(f) | FixedSizeList(f, _) => supported(f.data_type()),
        Struct(fields) => fields.iter().all(|f| supported(f.data_type())),
        Map(entries, _) => supported(entries.data_type()),
        _ => false,
    }
}

/// Digits after the seconds of a time unit.
fn digits(unit: &TimeUnit) -> u32 {
    match unit {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 3,
        TimeUnit::Microsecond => 6,
        TimeUnit::Nanosecond => 9,
    }
}

/// Offsets of a list's elements in its child.
pub(crate) enum Offsets {
    Small(arrow_buffer::OffsetBuffer<i32>),
    Large(arrow_buffer::OffsetBuffer<i64>),
    /// Every list has this many elements (a fixed-size list; `i * n` on from the array's
    /// own offset).
    Fixed {
        n: usize,
        first: usize,
    },
}

impl Offsets {
    fn range(&self, i: usize) -> std::ops::Range<usize> {
        match self {
            Offsets::Small(o) => o[i] as usize..o[i + 1] as usize,
            Offsets::Large(o) => o[i] as usize..o[i + 1] as usize,
            Offsets::Fixed { n, first } => (first + i) * n..(first + i + 1) * n,
        }
    }
}

/// A column of a decoded batch, downcast once (with its children) rather than once per
/// value.
pub(crate) enum Col {
    /// The Null type: every value is null.
    Null,
    Utf8(StringArray),
    LargeUtf8(LargeStringArray),
    Utf8View(StringViewArray),
    Binary(BinaryArray),
    LargeBinary(LargeBinaryArray),
    BinaryView(BinaryViewArray),
    FixedBinary(FixedSizeBinaryArray),
    Bool(BooleanArray),
    I8(PrimitiveArray<Int8Type>),
    I16(PrimitiveArray<Int16Type>),
    I32(PrimitiveArray<Int32Type>),
    I64(PrimitiveArray<Int64Type>),
    U8(PrimitiveArray<UInt8Type>),
    U16(PrimitiveArray<UInt16Type>),
    U32(PrimitiveArray<UInt32Type>),
    U64(PrimitiveArray<UInt64Type>),
    F16(PrimitiveArray<Float16Type>),
    F32(PrimitiveArray<Float32Type>),
    F64(PrimitiveArray<Float64Type>),
    Dec32(PrimitiveArray<Decimal32Type>),
    Dec64(PrimitiveArray<Decimal64Type>),
    Dec128(PrimitiveArray<Decimal128Type>),
    Dec256(PrimitiveArray<Decimal256Type>),
    Date32(PrimitiveArray<Date32Type>),
    Date64(PrimitiveArray<Date64Type>),
    /// Times of day and timestamps as counts of their unit, with the unit's digits.
    Time32 {
        array: ArrayRef,
        values: arrow_buffer::ScalarBuffer<i32>,
        digits: u32,
    },
    Time64 {
        array: ArrayRef,
        values: arrow_buffer::ScalarBuffer<i64>,
        digits: u32,
    },
    Timestamp {
        array: ArrayRef,
        values: arrow_buffer::ScalarBuffer<i64>,
        digits: u32,
        /// It has a time zone: an instant, shown in UTC with `Z`.
        utc: bool,
    },
    List {
        array: ArrayRef,
        offsets: Offsets,
        values: Box<Col>,
    },
    Struct {
        array: ArrayRef,
        names: Vec<String>,
        children: Vec<Col>,
    },
    Map {
        array: ArrayRef,
        offsets: arrow_buffer::OffsetBuffer<i32>,
        keys: Box<Col>,
        values: Box<Col>,
    },
}

impl Col {
    /// The column of `a`; `None` for a type [`supported`] refuses.
    pub(crate) fn new(a: &ArrayRef) -> Option<Col> {
        fn cast<T: Clone + 'static>(a: &ArrayRef) -> Option<T> {
            a.as_any().downcast_ref::<T>().cloned()
        }
        let time32 = |values: arrow_buffer::ScalarBuffer<i32>, unit: &TimeUnit| Col::Time32 {
            array: a.clone(),
            values,
            digits: digits(unit),
        };
        let time64 = |values: arrow_buffer::ScalarBuffer<i64>, unit: &TimeUnit| Col::Time64 {
            array: a.clone(),
            values,
            digits: digits(unit),
        };
        Some(match a.data_type() {
            DataType::Null => Col::Null,
            DataType::Utf8 => Col::Utf8(cast(a)?),
            DataType::LargeUtf8 => Col::LargeUtf8(cast(a)?),
            DataType::Utf8View => Col::Utf8View(cast(a)?),
            DataType::Binary => Col::Binary(cast(a)?),
            DataType::LargeBinary => Col::LargeBinary(cast(a)?),
            DataType::BinaryView => Col::BinaryView(cast(a)?),
            DataType::FixedSizeBinary(_) => Col::FixedBinary(cast(a)?),
            DataType::Boolean => Col::Bool(cast(a)?),
            DataType::Int8 => Col::I8(cast(a)?),
            DataType::Int16 => Col::I16(cast(a)?),
            DataType::Int32 => Col::I32(cast(a)?),
            DataType::Int64 => Col::I64(cast(a)?),
            DataType::UInt8 => Col::U8(cast(a)?),
            DataType::UInt16 => Col::U16(cast(a)?),
            DataType::UInt32 => Col::U32(cast(a)?),
            DataType::UInt64 => Col::U64(cast(a)?),
            DataType::Float16 => Col::F16(cast(a)?),
            DataType::Float32 => Col::F32(cast(a)?),
            DataType::Float64 => Col::F64(cast(a)?),
            DataType::Decimal32(..) => Col::Dec32(cast(a)?),
            DataType::Decimal64(..) => Col::Dec64(cast(a)?),
            DataType::Decimal128(..) => Col::Dec128(cast(a)?),
            DataType::Decimal256(..) => Col::Dec256(cast(a)?),
            DataType::Date32 => Col::Date32(cast(a)?),
            DataType::Date64 => Col::Date64(cast(a)?),
            DataType::Time32(u @ TimeUnit::Second) => time32(
                a.as_primitive_opt::<Time32SecondType>()?.values().clone(),
                u,
            ),
            DataType::Time32(u @ TimeUnit::Millisecond) => time32(
                a.as_primitive_opt::<Time32MillisecondType>()?
                    .values()
                    .clone(),
                u,
            ),
            DataType::Time64(u @ TimeUnit::Microsecond) => time64(
                a.as_primitive_opt::<Time64MicrosecondType>()?
                    .values()
                    .clone(),
                u,
            ),
            DataType::Time64(u @ TimeUnit::Nanosecond) => time64(
                a.as_primitive_opt::<Time64NanosecondType>()?
                    .values()
                    .clone(),
                u,
            ),
            DataType::Timestamp(unit, tz) => {
                let values = match unit {
                    TimeUnit::Second => a.as_primitive_opt::<TimestampSecondType>()?.values(),
                    TimeUnit::Millisecond => {
                        a.as_primitive_opt::<TimestampMillisecondType>()?.values()
                    }
                    TimeUnit::Microsecond => {
                        a.as_primitive_opt::<TimestampMicrosecondType>()?.values()
                    }
                    TimeUnit::Nanosecond => {
                        a.as_primitive_opt::<TimestampNanosecondType>()?.values()
                    }
                };
                Col::Timestamp {
                    array: a.clone(),
                    values: values.clone(),
                    digits: digits(unit),
                    utc: tz.is_some(),
                }
            }
            DataType::List(_) => {
                let l = a.as_list_opt::<i32>()?;
                Col::List {
                    array: a.clone(),
                    offsets: Offsets::Small(l.offsets().clone()),
                    values: Box::new(Col::new(l.values())?),
                }
            }
            DataType::LargeList(_) => {
                let l = a.as_list_opt::<i64>()?;
                Col::List {
                    array: a.clone(),
                    offsets: Offsets::Large(l.offsets().clone()),
                    values: Box::new(Col::new(l.values())?),
                }
            }
            DataType::FixedSizeList(_, n) => {
                let l = a.as_fixed_size_list_opt()?;
                let n = usize::try_from(*n).ok()?;
                Col::List {
                    array: a.clone(),
                    offsets: Offsets::Fixed {
                        n,
                        first: l.offset(),
                    },
                    values: Box::new(Col::new(l.values())?),
                }
            }
            DataType::Struct(fields) => {
                let s = a.as_struct_opt()?;
                Col::Struct {
                    array: a.clone(),
                    names: fields.iter().map(|f| f.name().clone()).collect(),
                    children: s.columns().iter().map(Col::new).collect::<Option<_>>()?,
                }
            }
            DataType::Map(..) => {
                let m = a.as_map_opt()?;
                Col::Map {
                    array: a.clone(),
                    offsets: m.offsets().clone(),
                    keys: Box::new(Col::new(m.keys())?),
                    values: Box::new(Col::new(m.values())?),
                }
            }
            _ => return None,
        })
    }

    fn array(&self) -> Option<&dyn Array> {
        Some(match self {
            Col::Null => return None,
            Col::Utf8(a) => a,
            Col::LargeUtf8(a) => a,
            Col::Utf8View(a) => a,
            Col::Binary(a) => a,
            Col::LargeBinary(a) => a,
            Col::BinaryView(a) => a,
            Col::FixedBinary(a) => a,
            Col::Bool(a) => a,
            Col::I8(a) => a,
            Col::I16(a) => a,
            Col::I32(a) => a,
            Col::I64(a) => a,
            Col::U8(a) => a,
            Col::U16(a) => a,
            Col::U32(a) => a,
            Col::U64(a) => a,
            Col::F16(a) => a,
            Col::F32(a) => a,
            Col::F64(a) => a,
            Col::Dec32(a) => a,
            Col::Dec64(a) => a,
            Col::Dec128(a) => a,
            Col::Dec256(a) => a,
            Col::Date32(a) => a,
            Col::Date64(a) => a,
            Col::Time32 { array, .. }
            | Col::Time64 { array, .. }
            | Col::Timestamp { array, .. }
            | Col::List { array, .. }
            | Col::Struct { array, .. }
            | Col::Map { array, .. } => array.as_ref(),
        })
    }

    /// Whether value `i` is null.
    pub(crate) fn is_null(&self, i: usize) -> bool {
        self.array().is_none_or(|a| a.is_null(i))
    }

    /// Value `i` as text, `None` if it is null: borrowed from the column for strings and
    /// binaries, or else written into `scratch` (cleared first).
    pub(crate) fn text<'a>(&'a self, i: usize, scratch: &'a mut Vec<u8>) -> Option<&'a [u8]> {
        if self.is_null(i) {
            return None;
        }
        scratch.clear();
        match self {
            Col::Utf8(a) => return Some(a.value(i).as_bytes()),
            Col::LargeUtf8(a) => return Some(a.value(i).as_bytes()),
            Col::Utf8View(a) => return Some(a.value(i).as_bytes()),
            Col::Binary(a) => return Some(a.value(i)),
            Col::LargeBinary(a) => return Some(a.value(i)),
            Col::BinaryView(a) => return Some(a.value(i)),
            Col::FixedBinary(a) => return Some(a.value(i)),
            Col::Bool(a) => return Some(if a.value(i) { b"true" } else { b"false" }),
            Col::List { .. } | Col::Struct { .. } | Col::Map { .. } => self.json(i, scratch),
            _ => self.scalar_text(i, scratch),
        }
        Some(scratch)
    }

    /// Appends value `i` as text to `out` (nothing if it is null).
    pub(crate) fn append_text(&self, i: usize, out: &mut Vec<u8>) {
        if self.is_null(i) {
            return;
        }
        match self {
            Col::Utf8(a) => out.extend_from_slice(a.value(i).as_bytes()),
            Col::LargeUtf8(a) => out.extend_from_slice(a.value(i).as_bytes()),
            Col::Utf8View(a) => out.extend_from_slice(a.value(i).as_bytes()),
            Col::Binary(a) => out.extend_from_slice(a.value(i)),
            Col::LargeBinary(a) => out.extend_from_slice(a.value(i)),
            Col::BinaryView(a) => out.extend_from_slice(a.value(i)),
            Col::FixedBinary(a) => out.extend_from_slice(a.value(i)),
            Col::Bool(a) => out.extend_from_slice(if a.value(i) { b"true" } else { b"false" }),
            Col::List { .. } | Col::Struct { .. } | Col::Map { .. } => self.json(i, out),
            _ => self.scalar_text(i, out),
        }
    }

    /// Appends the text of scalar value `i` (not null, not a string, binary, boolean or
    /// nested value) to `out`.
    fn scalar_text(&self, i: usize, out: &mut Vec<u8>) {
        // Writing into a Vec cannot fail.
        let _ = match self {
            Col::I8(a) => write!(out, "{}", a.value(i)),
            Col::I16(a) => write!(out, "{}", a.value(i)),
            Col::I32(a) => write!(out, "{}", a.value(i)),
            Col::I64(a) => write!(out, "{}", a.value(i)),
            Col::U8(a) => write!(out, "{}", a.value(i)),
            Col::U16(a) => write!(out, "{}", a.value(i)),
            Col::U32(a) => write!(out, "{}", a.value(i)),
            Col::U64(a) => write!(out, "{}", a.value(i)),
            Col::F16(a) => {
                float(a.value(i).to_f32(), out);
                Ok(())
            }
            Col::F32(a) => {
                float(a.value(i), out);
                Ok(())
            }
            Col::F64(a) => {
                float(a.value(i), out);
                Ok(())
            }
            Col::Dec32(a) => {
                decimal(&a.value(i).to_string(), a.scale(), out);
                Ok(())
            }
            Col::Dec64(a) => {
                decimal(&a.value(i).to_string(), a.scale(), out);
                Ok(())
            }
            Col::Dec128(a) => {
                decimal(&a.value(i).to_string(), a.scale(), out);
                Ok(())
            }
            Col::Dec256(a) => {
                decimal(&a.value(i).to_string(), a.scale(), out);
                Ok(())
            }
            Col::Date32(a) => {
                date(i64::from(a.value(i)), out);
                Ok(())
            }
            Col::Date64(a) => {
                date(a.value(i).div_euclid(86_400_000), out);
                Ok(())
            }
            Col::Time32 { values, digits, .. } => {
                time_of_day(i64::from(values[i]), *digits, out);
                Ok(())
            }
            Col::Time64 { values, digits, .. } => {
                time_of_day(values[i], *digits, out);
                Ok(())
            }
            Col::Timestamp {
                values,
                digits,
                utc,
                ..
            } => {
                timestamp(values[i], *digits, *utc, out);
                Ok(())
            }
            _ => Ok(()),
        };
    }

    /// Appends value `i` as JSON to `out` (`null` if it is null).
    pub(crate) fn json(&self, i: usize, out: &mut Vec<u8>) {
        if self.is_null(i) {
            out.extend_from_slice(b"null");
            return;
        }
        match self {
            Col::Null => out.extend_from_slice(b"null"),
            Col::Utf8(a) => json_str(a.value(i), out),
            Col::LargeUtf8(a) => json_str(a.value(i), out),
            Col::Utf8View(a) => json_str(a.value(i), out),
            Col::Binary(a) => base64_str(a.value(i), out),
            Col::LargeBinary(a) => base64_str(a.value(i), out),
            Col::BinaryView(a) => base64_str(a.value(i), out),
            Col::FixedBinary(a) => base64_str(a.value(i), out),
            Col::Bool(a) => out.extend_from_slice(if a.value(i) { b"true" } else { b"false" }),
            Col::I8(_) | Col::I16(_) | Col::I32(_) | Col::I64(_) => self.scalar_text(i, out),
            Col::U8(_) | Col::U16(_) | Col::U32(_) | Col::U64(_) => self.scalar_text(i, out),
            Col::F16(_) | Col::F32(_) | Col::F64(_) => {
                let start = out.len();
                self.scalar_text(i, out);
                // JSON has no NaN or infinity: they go as the strings the text form spells.
                if !matches!(out.get(start), Some(b'-' | b'0'..=b'9')) || out.ends_with(b"inf") {
                    out.insert(start, b'"');
                    out.push(b'"');
                }
            }
            Col::List {
                offsets, values, ..
            } => {
                out.push(b'[');
                for (n, j) in offsets.range(i).enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    values.json(j, out);
                }
                out.push(b']');
            }
            Col::Struct {
                names, children, ..
            } => {
                out.push(b'{');
                for (n, (name, child)) in names.iter().zip(children).enumerate() {
                    if n > 0 {
                        out.push(b',');
                    }
                    json_str(name, out);
                    out.push(b':');
                    child.json(i, out);
                }
                out.push(b'}');
            }
            Col::Map {
                offsets,
                keys,
                values,
                ..
            } => {
                out.push(b'{');
                let (lo, hi) = (offsets[i] as usize, offsets[i + 1] as usize);
                let mut key = Vec::new();
                for j in lo..hi {
                    if j > lo {
                        out.push(b',');
                    }
                    key.clear();
                    keys.json(j, &mut key);
                    if key.first() == Some(&b'"') {
                        out.extend_from_slice(&key);
                    } else {
                        // A number, boolean or nested key: its JSON text as the member name.
                        json_bytes(&key, out);
                    }
                    out.push(b':');
                    values.json(j, out);
                }
                out.push(b'}');
            }
            // Quoted text: decimals (exact), dates, times, timestamps.
            _ => {
                let start = out.len();
                self.scalar_text(i, out);
                out.insert(start, b'"');
                out.push(b'"');
            }
        }
    }
}

/// Appends `x` in the shortest form that reads back as `x`, laid out as JavaScript lays out
/// numbers (see the module's docs); `NaN`, `inf`, `-inf` for the others.
pub fn float<F: Float>(x: F, out: &mut Vec<u8>) {
    if x.is_nan() {
        out.extend_from_slice(b"NaN");
        return;
    }
    if x.is_infinite() {
        out.extend_from_slice(if x.is_negative() { b"-inf" } else { b"inf" });
        return;
    }
    // Rust's `{:e}` gives the shortest round-trip digits: "-1.2345e-7", "5e20", "0e0".
    let mut buf = [0u8; 48];
    let mut w = std::io::Cursor::new(&mut buf[..]);
    let _ = write!(w, "{x:e}");
    let len = w.position() as usize;
    let s = &buf[..len];
    let (neg, s) = match s.strip_prefix(b"-") {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let e_at = s.iter().position(|&b| b == b'e').unwrap_or(s.len());
    let mantissa = &s[..e_at];
    let exp: i32 = std::str::from_utf8(s.get(e_at + 1..).unwrap_or(b"0"))
        .ok()
        .and_then(|e| e.parse().ok())
        .unwrap_or(0);
    let mut digits = [0u8; 40];
    let mut k = 0;
    for &b in mantissa.iter().filter(|b| b.is_ascii_digit()) {
        if k < digits.len() {
            digits[k] = b;
            k += 1;
        }
    }
    let digits = &digits[..k.max(1)];
    let k = digits.len() as i32;
    if neg {
        out.push(b'-');
    }
    if digits == b"0" {
        out.push(b'0');
        return;
    }
    // The value is 0.d1d2...dk × 10^n.
    let n = exp + 1;
    if k <= n && n <= 21 {
        out.extend_from_slice(digits);
        out.resize(out.len() + (n - k) as usize, b'0');
    } else if 0 < n && n <= 21 {
        out.extend_from_slice(&digits[..n as usize]);
        out.push(b'.');
        out.extend_from_slice(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + (-n) as usize, b'0');
        out.extend_from_slice(digits);
    } else {
        out.push(digits[0]);
        if k > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        let _ = write!(
            out,
            "e{}{}",
            if n - 1 < 0 { '-' } else { '+' },
            (n - 1).abs()
        );
    }
}

/// The floats [`float`] formats.
pub trait Float: std::fmt::LowerExp + Copy {
    fn is_nan(self) -> bool;
    fn is_infinite(self) -> bool;
    fn is_negative(self) -> bool;
}

impl Float for f64 {
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    fn is_infinite(self) -> bool {
        f64::is_infinite(self)
    }
    fn is_negative(self) -> bool {
        self.is_sign_negative()
    }
}

impl Float for f32 {
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    fn is_infinite(self) -> bool {
        f32::is_infinite(self)
    }
    fn is_negative(self) -> bool {
        self.is_sign_negative()
    }
}

/// Appends the decimal whose unscaled value is `value` (decimal text, maybe negative) with
/// `scale` digits after the point; a negative scale multiplies by a power of ten.
fn decimal(value: &str, scale: i8, out: &mut Vec<u8>) {
    let (neg, digits) = match value.strip_prefix('-') {
        Some(d) => (true, d.as_bytes()),
        None => (false, value.as_bytes()),
    };
    if neg {
        out.push(b'-');
    }
    if scale <= 0 {
        out.extend_from_slice(digits);
        if digits != b"0" {
            out.resize(out.len() + scale.unsigned_abs() as usize, b'0');
        }
        return;
    }
    let scale = scale as usize;
    if digits.len() <= scale {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + scale - digits.len(), b'0');
        out.extend_from_slice(digits);
    } else {
        let (whole, frac) = digits.split_at(digits.len() - scale);
        out.extend_from_slice(whole);
        out.push(b'.');
        out.extend_from_slice(frac);
    }
}

/// Year, month and day of the day `days` after 1970-01-01 (proleptic Gregorian; H. Hinnant's
/// `civil_from_days`).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Appends `YYYY-MM-DD` of the day `days` after 1970-01-01 (a year outside 0..=9999 gets a
/// sign, as ISO 8601's expanded years).
fn date(days: i64, out: &mut Vec<u8>) {
    let (y, m, d) = civil(days);
    let _ = if (0..=9999).contains(&y) {
        write!(out, "{y:04}-{m:02}-{d:02}")
    } else {
        write!(out, "{y:+05}-{m:02}-{d:02}")
    };
}

/// Appends `HH:MM:SS` and `digits` digits of fraction of `count` units since midnight.
fn time_of_day(count: i64, digits: u32, out: &mut Vec<u8>) {
    let per_sec = 10i64.pow(digits);
    clock(
        count.div_euclid(per_sec),
        count.rem_euclid(per_sec),
        digits,
        out,
    );
}

fn clock(secs: i64, frac: i64, digits: u32, out: &mut Vec<u8>) {
    let _ = write!(
        out,
        "{:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    if digits > 0 {
        let _ = write!(out, ".{frac:0width$}", width = digits as usize);
    }
}

/// Appends the RFC 3339 text of `count` units (`digits` digits a second) since the epoch.
fn timestamp(count: i64, digits: u32, utc: bool, out: &mut Vec<u8>) {
    let per_sec = 10i64.pow(digits);
    let secs = count.div_euclid(per_sec);
    date(secs.div_euclid(86_400), out);
    out.push(b'T');
    clock(
        secs.rem_euclid(86_400),
        count.rem_euclid(per_sec),
        digits,
        out,
    );
    if utc {
        out.push(b'Z');
    }
}

/// Appends `s` as a JSON string.
pub(crate) fn json_str(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    let b = s.as_bytes();
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        let esc: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&b[start..i]);
        if esc.is_empty() {
            let _ = write!(out, "\\u{c:04x}");
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(&b[start..]);
    out.push(b'"');
}

/// Appends text bytes as a JSON string; `Err` if they are not UTF-8 (nothing appended).
pub(crate) fn json_bytes_checked(b: &[u8], out: &mut Vec<u8>) -> Result<(), std::str::Utf8Error> {
    json_str(std::str::from_utf8(b)?, out);
    Ok(())
}

/// Appends JSON text (always UTF-8) as a JSON string.
fn json_bytes(b: &[u8], out: &mut Vec<u8>) {
    json_str(&String::from_utf8_lossy(b), out);
}

fn base64_str(b: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    let at = out.len();
    let n = base64::encoded_len(b.len(), true).unwrap_or(0);
    out.resize(at + n, 0);
    let written = base64::engine::general_purpose::STANDARD
        .encode_slice(b, &mut out[at..])
        .unwrap_or(0);
    out.truncate(at + written);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f64s(x: f64) -> String {
        let mut out = Vec::new();
        float(x, &mut out);
        String::from_utf8(out).unwrap()
    }

    fn f32s(x: f32) -> String {
        let mut out = Vec::new();
        float(x, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn floats_are_shortest_and_laid_out_as_javascript_does() {
        for (x, want) in [
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (1.5, "1.5"),
            (-2.25, "-2.25"),
            (0.1, "0.1"),
            (0.1 + 0.2, "0.30000000000000004"),
            (100.0, "100"),
            (123456789.125, "123456789.125"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1.5e300, "1.5e+300"),
            (0.000001, "0.000001"),
            (0.0000001, "1e-7"),
            (1.25e-7, "1.25e-7"),
            (5e-324, "5e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(f64s(x), want, "{x:?}");
        }
        // Single precision: the shortest digits of the f32 itself.
        assert_eq!(f32s(0.1), "0.1");
        assert_eq!(f32s(16777216.0), "16777216");
        assert_eq!(f32s(3.4028235e38), "3.4028235e+38");
        assert_eq!(f32s(1e-10), "1e-10");
    }

    #[test]
    fn every_formatted_float_reads_back_exactly() {
        let mut x = 1.0f64;
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let y = f64::from_bits(seed);
            for v in [x, y, y as f32 as f64] {
                if v.is_finite() {
                    let s = f64s(v);
                    assert_eq!(s.parse::<f64>().unwrap().to_bits(), v.to_bits(), "{s}");
                }
            }
            let f = f32::from_bits(seed as u32);
            if f.is_finite() {
                let s = f32s(f);
                assert_eq!(s.parse::<f32>().unwrap().to_bits(), f.to_bits(), "{s}");
            }
            x *= -1.37;
            if x.abs() > 1e300 {
                x = 1e-300;
            }
        }
    }

    fn dec(v: &str, scale: i8) -> String {
        let mut out = Vec::new();
        decimal(v, scale, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn decimals_keep_every_digit_of_their_scale() {
        assert_eq!(dec("1230", 2), "12.30");
        assert_eq!(dec("-5", 2), "-0.05");
        assert_eq!(dec("0", 2), "0.00");
        assert_eq!(dec("7", 0), "7");
        assert_eq!(dec("12", -2), "1200");
        assert_eq!(dec("0", -2), "0");
        assert_eq!(
            dec("-123456789012345678901234567890", 10),
            "-12345678901234567890.1234567890"
        );
    }

    fn text(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut out = Vec::new();
        f(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn dates_times_and_timestamps() {
        assert_eq!(text(|o| date(0, o)), "1970-01-01");
        assert_eq!(text(|o| date(19_844, o)), "2024-05-01");
        assert_eq!(text(|o| date(-1, o)), "1969-12-31");
        assert_eq!(text(|o| date(11_016, o)), "2000-02-29");
        assert_eq!(text(|o| date(-719_528, o)), "0000-01-01");
        assert_eq!(text(|o| date(2_932_897, o)), "+10000-01-01");
        assert_eq!(text(|o| time_of_day(45_296, 0, o)), "12:34:56");
        assert_eq!(text(|o| time_of_day(45_296_007, 3, o)), "12:34:56.007");
        let t = 1_714_564_800i64; // 2024-05-01T12:00:00Z
        assert_eq!(text(|o| timestamp(t, 0, true, o)), "2024-05-01T12:00:00Z");
        assert_eq!(
            text(|o| timestamp(t * 1000 + 250, 3, true, o)),
            "2024-05-01T12:00:00.250Z"
        );
        assert_eq!(
            text(|o| timestamp(t * 1_000_000 + 5, 6, false, o)),
            "2024-05-01T12:00:00.000005"
        );
        assert_eq!(
            text(|o| timestamp(-1, 9, true, o)),
            "1969-12-31T23:59:59.999999999Z"
        );
    }

    #[test]
    fn json_strings_escape_what_json_needs() {
        assert_eq!(
            text(|o| json_str("a\"b\\c\n\t\u{1}é", o)),
            "\"a\\\"b\\\\c\\n\\t\\u0001é\""
        );
        assert_eq!(text(|o| base64_str(b"\x00\xffab", o)), "\"AP9hYg==\"");
        assert!(json_bytes_checked(b"\xff", &mut Vec::new()).is_err());
    }
}
