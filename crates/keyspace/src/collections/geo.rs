//! Geospatial indexes: sorted sets whose scores are positions, as Redis keeps them, so a set
//! written by GEOADD is an ordinary sorted set on both sides and every search, distance and
//! coordinate matches redis-server's to the last digit.
//!
//! A position is a 52-bit geohash stored as the member's score (exact in a double):
//!
//! ```text
//! lat_cell = floor((lat - LAT_MIN) / (LAT_MAX - LAT_MIN) * 2^26)     (0 .. 2^26)
//! lon_cell = floor((lon - LON_MIN) / (LON_MAX - LON_MIN) * 2^26)
//! score    = interleave(lat_cell, lon_cell): bit 2i = bit i of lat_cell,
//!                                            bit 2i+1 = bit i of lon_cell
//! ```
//!
//! Latitudes are limited to ±85.05112878 (the Web Mercator square). A cell decodes to its
//! centre. Nearby cells share score prefixes, so a search reads the score ranges of the cell
//! that holds the centre and its eight neighbours, at a precision (`step` bits per axis) where
//! those nine cells cover the search's bounding box, and keeps the members within the shape.
//! Distances are haversine on a sphere of radius 6372797.560856 m. The cells read, their
//! order, and the arithmetic are Redis 7.0's, so an unsorted reply lists members in the same
//! order too.

use bytes::Bytes;

use super::zset::ZSet;
use crate::error::{Error, GeoError, Result};
use crate::keys::{Keys, RawRead};
use crate::num::parse_double;
use crate::op::ScoreRange;
use crate::value::Score;

/// Southernmost latitude a position may have.
pub const LAT_MIN: f64 = -85.051_128_78;
/// Northernmost latitude a position may have.
pub const LAT_MAX: f64 = 85.051_128_78;
/// Westernmost longitude.
pub const LON_MIN: f64 = -180.0;
/// Easternmost longitude.
pub const LON_MAX: f64 = 180.0;
/// Bits per axis of a stored position.
const STEP_MAX: u8 = 26;
const EARTH_RADIUS_M: f64 = 6_372_797.560_856;
const MERCATOR_MAX: f64 = 20_037_726.37;
const D_R: f64 = std::f64::consts::PI / 180.0;
const GEOHASH_ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";

/// Whether (`lon`, `lat`) may be stored.
pub fn valid(lon: f64, lat: f64) -> bool {
    (LON_MIN..=LON_MAX).contains(&lon) && (LAT_MIN..=LAT_MAX).contains(&lat)
}

/// The score GEOADD stores for a valid position.
pub fn score_of(lon: f64, lat: f64) -> f64 {
    let h = encode(&WORLD, lon, lat, STEP_MAX);
    align52(h) as f64
}

/// The position (longitude, latitude) a score stands for: the centre of its cell.
pub fn position(score: f64) -> (f64, f64) {
    let h = Cell {
        bits: score as u64,
        step: STEP_MAX,
    };
    let a = decode(&WORLD, h);
    (
        ((a.lon.0 + a.lon.1) / 2.0).clamp(LON_MIN, LON_MAX),
        ((a.lat.0 + a.lat.1) / 2.0).clamp(LAT_MIN, LAT_MAX),
    )
}

/// The standard 11-character geohash of the position a score stands for (GEOHASH): encoded
/// again over latitudes ±90, its last character always `0` (52 bits give ten).
pub fn geohash(score: f64) -> [u8; 11] {
    let (lon, lat) = position(score);
    let h = encode(
        &Ranges {
            lon: (-180.0, 180.0),
            lat: (-90.0, 90.0),
        },
        lon,
        lat,
        STEP_MAX,
    );
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().take(10).enumerate() {
        let idx = (h.bits >> (52 - (i + 1) * 5)) & 0x1f;
        *c = GEOHASH_ALPHABET[idx as usize];
    }
    out
}

/// Great-circle distance in meters between two positions (longitude first).
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let lon1r = lon1 * D_R;
    let lon2r = lon2 * D_R;
    let v = ((lon2r - lon1r) / 2.0).sin();
    // Along a meridian the haversine reduces to the latitude difference (and costs no trig).
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let lat1r = lat1 * D_R;
    let lat2r = lat2 * D_R;
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_M * a.sqrt().asin()
}

fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS_M * (lat2 * D_R - lat1 * D_R).abs()
}

/// A distance as GEODIST and WITHDIST write it: rounded to four decimals (half to even),
/// always four after the point.
pub fn format_distance(d: f64) -> String {
    let v = (d * 10_000.0).round_ties_even() as i64;
    let sign = if v < 0 { "-" } else { "" };
    let a = v.unsigned_abs();
    format!("{sign}{}.{:04}", a / 10_000, a % 10_000)
}

/// What a search covers, in meters: a circle or an axis-aligned box.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// BYRADIUS, GEORADIUS.
    Radius(f64),
    /// BYBOX: width and height.
    Box(f64, f64),
}

/// A search: its centre, its shape, and the unit the shape and the distances are in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Area {
    /// Longitude of the centre.
    pub lon: f64,
    /// Latitude of the centre.
    pub lat: f64,
    /// The shape, in `unit`s.
    pub shape: Shape,
    /// Meters per unit (m 1, km 1000, ft 0.3048, mi 1609.34).
    pub unit: f64,
}

/// A member found by a search.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The member.
    pub member: Bytes,
    /// Its score (its 52-bit geohash).
    pub score: f64,
    /// Distance from the centre, in the search's unit.
    pub dist: f64,
    /// Its position.
    pub lon: f64,
    /// Its position.
    pub lat: f64,
}

/// How a search's results are ordered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// As found: cell by cell, each in score order.
    #[default]
    Unsorted,
    /// Nearest first.
    Asc,
    /// Farthest first.
    Desc,
}

/// The members of `z` within `area`, ordered by `order`, at most `count`. With `any`, the
/// search stops at the first `count` found (and sorts only those); without, it finds all and
/// keeps the `count` first in order (nearest, when no order is asked for).
pub fn search<T: RawRead + ?Sized>(
    k: &mut Keys<'_, T>,
    z: &ZSet,
    area: &Area,
    count: Option<u64>,
    any: bool,
    mut order: Order,
) -> Result<Vec<Found>> {
    let limit = if any { count } else { None };
    let mut found = Vec::new();
    let cells = cover(area);
    let mut last: Option<Cell> = None;
    for (i, cell) in cells.iter().enumerate() {
        let Some(cell) = *cell else { continue };
        // Neighbours coincide when the cells are as large as the world; each is read once.
        // Redis compares with the last neighbour read, never with the centre cell.
        if i > 0 && last == Some(cell) {
            continue;
        }
        if limit.is_some_and(|l| !found.is_empty() && found.len() as u64 >= l) {
            break;
        }
        let min = align52(cell) as f64;
        let max = align52(Cell {
            bits: cell.bits + 1,
            step: cell.step,
        }) as f64;
        let range = ScoreRange {
            min: Score(min),
            max: Score(max),
            min_ex: false,
            max_ex: true,
        };
        for (member, score) in z.range_by_score(k, &range, false, 0, None)? {
            if let Some((dist, lon, lat)) = within(area, score) {
                found.push(Found {
                    member,
                    score,
                    dist: dist / area.unit,
                    lon,
                    lat,
                });
            }
            if limit.is_some_and(|l| found.len() as u64 >= l) {
                break;
            }
        }
        if i > 0 {
            last = Some(cell);
        }
    }
    if count.is_some() && order == Order::Unsorted && !any {
        order = Order::Asc;
    }
    // Stable, as glibc's qsort (a merge sort) is for the sizes met here.
    match order {
        Order::Unsorted => {}
        Order::Asc => found.sort_by(|a, b| a.dist.total_cmp(&b.dist)),
        Order::Desc => found.sort_by(|a, b| b.dist.total_cmp(&a.dist)),
    }
    if let Some(n) = count {
        found.truncate(usize::try_from(n).unwrap_or(usize::MAX));
    }
    Ok(found)
}

/// The position of `member` of `z`, for a search around it.
pub fn member_position<T: RawRead + ?Sized>(
    k: &mut Keys<'_, T>,
    z: &ZSet,
    member: &[u8],
) -> Result<(f64, f64)> {
    match z.score(k, member)? {
        Some(s) => Ok(position(s)),
        None => Err(GeoError::MemberMissing.into()),
    }
}

/// Which command of the search family a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// GEORADIUS (`ro`: GEORADIUS_RO, which takes no STORE).
    Radius { ro: bool },
    /// GEORADIUSBYMEMBER (`ro`: GEORADIUSBYMEMBER_RO).
    ByMember { ro: bool },
    /// GEOSEARCH.
    Search,
    /// GEOSEARCHSTORE.
    SearchStore,
}

impl Form {
    /// The argument index of the searched key.
    pub fn src(self) -> usize {
        match self {
            Form::SearchStore => 2,
            _ => 1,
        }
    }
}

/// A search request, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The area searched; `None` when there is no set to search (its centre and shape may
    /// then be unread, as in Redis): nothing is found.
    pub area: Option<Area>,
    /// At most this many results.
    pub count: Option<u64>,
    /// Stop at the first `count` found instead of keeping the `count` first in order.
    pub any: bool,
    /// How results are ordered.
    pub order: Order,
    /// Where the results go, and whether scored by their distance.
    pub store: Option<(Bytes, bool)>,
    /// WITHDIST.
    pub withdist: bool,
    /// WITHHASH.
    pub withhash: bool,
    /// WITHCOORD.
    pub withcoord: bool,
}

/// Parses `args` (the whole request, its name first) of `form` as Redis's
/// `georadiusGeneric` does, in its order, so the first error Redis gives is the one given: a
/// member centre is looked up in `z` where the request names it. `z`: the searched set, if
/// the key holds one (the caller refused any other kind first).
pub fn parse<T: RawRead + ?Sized>(
    k: &mut Keys<'_, T>,
    z: Option<&ZSet>,
    args: &[Bytes],
    form: Form,
) -> Result<Request> {
    let arg = |i: usize| args.get(i).map(|a| &a[..]).unwrap_or_default();
    let mut centre = None;
    let mut shape = None;
    let mut store = None;
    let base = match form {
        Form::Radius { .. } => {
            centre = Some(lonlat(arg(2), arg(3))?);
            shape = Some(radius(arg(4), arg(5))?);
            6
        }
        Form::ByMember { .. } => {
            if let Some(z) = z {
                centre = Some(member_position(k, z, arg(2))?);
                shape = Some(radius(arg(3), arg(4))?);
            }
            5
        }
        Form::Search => 2,
        Form::SearchStore => {
            store = Some((args.get(1).cloned().unwrap_or_default(), false));
            3
        }
    };
    let search = matches!(form, Form::Search | Form::SearchStore);
    let may_store = matches!(
        form,
        Form::Radius { ro: false } | Form::ByMember { ro: false }
    );
    let (mut withdist, mut withhash, mut withcoord, mut any) = (false, false, false, false);
    let (mut from_member, mut from_lonlat, mut by_radius, mut by_box) =
        (false, false, false, false);
    let mut order = Order::Unsorted;
    let mut count = None;
    let rest = args.get(base..).unwrap_or_default();
    let is = |a: &[u8], w: &str| a.eq_ignore_ascii_case(w.as_bytes());
    let mut i = 0;
    while i < rest.len() {
        let a = &rest[i][..];
        let left = rest.len() - i - 1;
        match () {
            _ if is(a, "withdist") => withdist = true,
            _ if is(a, "withhash") => withhash = true,
            _ if is(a, "withcoord") => withcoord = true,
            _ if is(a, "any") => any = true,
            _ if is(a, "asc") => order = Order::Asc,
            _ if is(a, "desc") => order = Order::Desc,
            _ if is(a, "count") && left >= 1 => {
                let n = rialto_resp::parse_redis_int(&rest[i + 1][..]).ok_or(Error::NotInteger)?;
                if n <= 0 {
                    return Err(GeoError::CountNotPositive.into());
                }
                count = Some(n as u64);
                i += 1;
            }
            _ if (is(a, "store") || is(a, "storedist")) && left >= 1 && may_store => {
                store = Some((rest[i + 1].clone(), is(a, "storedist")));
                i += 1;
            }
            _ if is(a, "storedist") && form == Form::SearchStore => {
                store = store.map(|(dst, _)| (dst, true));
            }
            _ if is(a, "frommember") && left >= 1 && search && !from_lonlat => {
                if let Some(z) = z {
                    centre = Some(member_position(k, z, &rest[i + 1][..])?);
                }
                from_member = true;
                i += 1;
            }
            _ if is(a, "fromlonlat") && left >= 2 && search && !from_member => {
                centre = Some(lonlat(&rest[i + 1][..], &rest[i + 2][..])?);
                from_lonlat = true;
                i += 2;
            }
            _ if is(a, "byradius") && left >= 2 && search && !by_box => {
                shape = Some(radius(&rest[i + 1][..], &rest[i + 2][..])?);
                by_radius = true;
                i += 2;
            }
            _ if is(a, "bybox") && left >= 3 && search && !by_radius => {
                shape = Some(boxed(&rest[i + 1][..], &rest[i + 2][..], &rest[i + 3][..])?);
                by_box = true;
                i += 3;
            }
            _ => return Err(Error::Syntax),
        }
        i += 1;
    }
    if store.is_some() && (withdist || withhash || withcoord) {
        return Err(GeoError::StoreWithOptions {
            search_store: form == Form::SearchStore,
        }
        .into());
    }
    let name = || String::from_utf8_lossy(arg(0)).into_owned();
    if search && !(from_member || from_lonlat) {
        return Err(GeoError::NoCentre(name()).into());
    }
    if search && !(by_radius || by_box) {
        return Err(GeoError::NoShape(name()).into());
    }
    if any && count.is_none() {
        return Err(GeoError::AnyWithoutCount.into());
    }
    let area = match (z, centre, shape) {
        (Some(_), Some((lon, lat)), Some((shape, unit))) => Some(Area {
            lon,
            lat,
            shape,
            unit,
        }),
        _ => None,
    };
    Ok(Request {
        area,
        count,
        any,
        order,
        store,
        withdist,
        withhash,
        withcoord,
    })
}

/// What `req` finds in `z`.
pub fn run<T: RawRead + ?Sized>(
    k: &mut Keys<'_, T>,
    z: &ZSet,
    req: &Request,
) -> Result<Vec<Found>> {
    match &req.area {
        Some(a) => search(k, z, a, req.count, req.any, req.order),
        None => Ok(Vec::new()),
    }
}

/// A longitude and latitude argument pair, checked to be a position GEOADD can store.
pub fn lonlat(lon: &[u8], lat: &[u8]) -> Result<(f64, f64)> {
    let lon = parse_double(lon).ok_or(Error::NotFloat)?;
    let lat = parse_double(lat).ok_or(Error::NotFloat)?;
    if !valid(lon, lat) {
        return Err(GeoError::BadPosition(lon, lat).into());
    }
    Ok((lon, lat))
}

/// Meters per `unit` (m, km, ft, mi, any case).
pub fn unit(arg: &[u8]) -> Result<f64> {
    const UNITS: [(&str, f64); 4] = [("m", 1.0), ("km", 1000.0), ("ft", 0.3048), ("mi", 1609.34)];
    UNITS
        .iter()
        .find(|(name, _)| arg.eq_ignore_ascii_case(name.as_bytes()))
        .map(|&(_, m)| m)
        .ok_or_else(|| GeoError::BadUnit.into())
}

/// A radius and its unit.
fn radius(r: &[u8], u: &[u8]) -> Result<(Shape, f64)> {
    let r = parse_double(r).ok_or(GeoError::NotNumeric("radius"))?;
    if r < 0.0 {
        return Err(GeoError::NegativeRadius.into());
    }
    Ok((Shape::Radius(r), unit(u)?))
}

/// A box's width, height and unit.
fn boxed(w: &[u8], h: &[u8], u: &[u8]) -> Result<(Shape, f64)> {
    let w = parse_double(w).ok_or(GeoError::NotNumeric("width"))?;
    let h = parse_double(h).ok_or(GeoError::NotNumeric("height"))?;
    if w < 0.0 || h < 0.0 {
        return Err(GeoError::NegativeBox.into());
    }
    Ok((Shape::Box(w, h), unit(u)?))
}

/// Redis's `georadiusGetKeys`: the argument index of the destination of the last STORE or
/// STOREDIST from the fifth argument on (GEORADIUS, GEORADIUSBYMEMBER).
pub fn radius_store_key(args: &[Bytes]) -> Option<usize> {
    let mut stored = None;
    let mut i = 5;
    while i < args.len() {
        let a = &args[i];
        if (a.eq_ignore_ascii_case(b"store") || a.eq_ignore_ascii_case(b"storedist"))
            && i + 1 < args.len()
        {
            stored = Some(i + 1);
            i += 1;
        }
        i += 1;
    }
    stored
}

/// Distance in meters and position of the member at `score` if it lies within `area`.
fn within(area: &Area, score: f64) -> Option<(f64, f64, f64)> {
    let (lon, lat) = position(score);
    let d = match area.shape {
        Shape::Radius(r) => {
            let d = distance(area.lon, area.lat, lon, lat);
            if d > r * area.unit {
                return None;
            }
            d
        }
        Shape::Box(w, h) => {
            if lat_distance(lat, area.lat) > h * area.unit / 2.0 {
                return None;
            }
            if distance(lon, lat, area.lon, lat) > w * area.unit / 2.0 {
                return None;
            }
            distance(area.lon, area.lat, lon, lat)
        }
    };
    Some((d, lon, lat))
}

/// A cell: the first `2 * step` bits of a geohash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cell {
    bits: u64,
    step: u8,
}

/// Longitude and latitude bounds of a cell, or of the encoding.
#[derive(Debug, Clone, Copy)]
struct Ranges {
    lon: (f64, f64),
    lat: (f64, f64),
}

const WORLD: Ranges = Ranges {
    lon: (LON_MIN, LON_MAX),
    lat: (LAT_MIN, LAT_MAX),
};

fn align52(c: Cell) -> u64 {
    c.bits << (52 - u32::from(c.step) * 2)
}

/// The cell of `step` bits per axis holding a position inside `r` (the caller checks it is).
fn encode(r: &Ranges, lon: f64, lat: f64, step: u8) -> Cell {
    let scale = (1u64 << step) as f64;
    let lat_off = (lat - r.lat.0) / (r.lat.1 - r.lat.0) * scale;
    let lon_off = (lon - r.lon.0) / (r.lon.1 - r.lon.0) * scale;
    Cell {
        bits: interleave(lat_off as u32, lon_off as u32),
        step,
    }
}

fn decode(r: &Ranges, c: Cell) -> Ranges {
    let (ilat, ilon) = deinterleave(c.bits);
    let cells = (1u64 << c.step) as f64;
    let lat_scale = r.lat.1 - r.lat.0;
    let lon_scale = r.lon.1 - r.lon.0;
    Ranges {
        lat: (
            r.lat.0 + (f64::from(ilat) / cells) * lat_scale,
            r.lat.0 + ((f64::from(ilat) + 1.0) / cells) * lat_scale,
        ),
        lon: (
            r.lon.0 + (f64::from(ilon) / cells) * lon_scale,
            r.lon.0 + ((f64::from(ilon) + 1.0) / cells) * lon_scale,
        ),
    }
}

/// Bit `i` of `x` to bit `2i`, bit `i` of `y` to bit `2i + 1`.
fn interleave(x: u32, y: u32) -> u64 {
    spread(x) | (spread(y) << 1)
}

fn spread(v: u32) -> u64 {
    let mut v = u64::from(v);
    v = (v | (v << 16)) & 0x0000_FFFF_0000_FFFF;
    v = (v | (v << 8)) & 0x00FF_00FF_00FF_00FF;
    v = (v | (v << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    v = (v | (v << 2)) & 0x3333_3333_3333_3333;
    (v | (v << 1)) & 0x5555_5555_5555_5555
}

fn squeeze(v: u64) -> u32 {
    let mut v = v & 0x5555_5555_5555_5555;
    v = (v | (v >> 1)) & 0x3333_3333_3333_3333;
    v = (v | (v >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    v = (v | (v >> 4)) & 0x00FF_00FF_00FF_00FF;
    v = (v | (v >> 8)) & 0x0000_FFFF_0000_FFFF;
    v = (v | (v >> 16)) & 0x0000_0000_FFFF_FFFF;
    v as u32
}

/// (latitude cell, longitude cell) of interleaved bits.
fn deinterleave(bits: u64) -> (u32, u32) {
    (squeeze(bits), squeeze(bits >> 1))
}

/// Longitude bits of a geohash (odd positions), and latitude bits (even).
const LON_BITS: u64 = 0xaaaa_aaaa_aaaa_aaaa;
const LAT_BITS: u64 = 0x5555_5555_5555_5555;

/// The cell `d` (±1) columns east of `c`, wrapping around the world.
fn move_x(c: Cell, d: i8) -> Cell {
    step_along(c, d, LON_BITS)
}

/// The cell `d` (±1) rows north of `c`.
fn move_y(c: Cell, d: i8) -> Cell {
    step_along(c, d, LAT_BITS)
}

/// `c` moved by `d` (±1) along the axis whose bits `axis` selects: that axis's interleaved
/// bits counted up or down, carrying through the other axis's positions, the rest kept.
fn step_along(c: Cell, d: i8, axis: u64) -> Cell {
    let width = 64 - u32::from(c.step) * 2;
    let own = c.bits & axis;
    let other = c.bits & !axis;
    // Ones in the other axis's positions, so a carry crosses them.
    let zz = !axis >> width;
    let own = if d > 0 {
        own.wrapping_add(zz + 1)
    } else {
        (own | zz).wrapping_sub(zz + 1)
    };
    Cell {
        bits: (own & (axis >> width)) | other,
        step: c.step,
    }
}

/// Bits per axis at which nine cells cover a search of `range_m` meters at latitude `lat`.
fn steps_for(mut range_m: f64, lat: f64) -> u8 {
    if range_m == 0.0 {
        return STEP_MAX;
    }
    let mut step: i32 = 1;
    while range_m < MERCATOR_MAX {
        range_m *= 2.0;
        step += 1;
    }
    step -= 2;
    // Meridians converge toward the poles: wider cells.
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, i32::from(STEP_MAX)) as u8
}

/// The search's bounding box: (min lon, min lat, max lon, max lat).
fn bounding_box(a: &Area) -> (f64, f64, f64, f64) {
    let (half_w, half_h) = match a.shape {
        Shape::Radius(r) => (r * a.unit, r * a.unit),
        Shape::Box(w, h) => (w / 2.0 * a.unit, h / 2.0 * a.unit),
    };
    let lat_delta = half_h / EARTH_RADIUS_M / D_R;
    let lon_delta_top = half_w / EARTH_RADIUS_M / ((a.lat + lat_delta) * D_R).cos() / D_R;
    let lon_delta_bottom = half_w / EARTH_RADIUS_M / ((a.lat - lat_delta) * D_R).cos() / D_R;
    // The box's wider edge is the one nearer the equator.
    let lon_delta = if a.lat < 0.0 {
        lon_delta_bottom
    } else {
        lon_delta_top
    };
    (
        a.lon - lon_delta,
        a.lat - lat_delta,
        a.lon + lon_delta,
        a.lat + lat_delta,
    )
}

/// The cells a search reads: the centre's, then north, south, east, west, north-east,
/// north-west, south-east, south-west; `None` for a neighbour the box does not reach.
fn cover(a: &Area) -> [Option<Cell>; 9] {
    let (min_lon, min_lat, max_lon, max_lat) = bounding_box(a);
    let radius_m = match a.shape {
        Shape::Radius(r) => r,
        Shape::Box(w, h) => ((w / 2.0) * (w / 2.0) + (h / 2.0) * (h / 2.0)).sqrt(),
    } * a.unit;
    let mut step = steps_for(radius_m, a.lat);
    let mut cell = encode(&WORLD, a.lon, a.lat, step);
    let mut n = neighbours(cell);
    // Near a cell's edge the estimate may leave part of the box outside the nine: one step
    // coarser then.
    let too_fine = decode(&WORLD, n[0]).lat.1 < max_lat
        || decode(&WORLD, n[1]).lat.0 > min_lat
        || decode(&WORLD, n[2]).lon.1 < max_lon
        || decode(&WORLD, n[3]).lon.0 > min_lon;
    if step > 1 && too_fine {
        step -= 1;
        cell = encode(&WORLD, a.lon, a.lat, step);
        n = neighbours(cell);
    }
    let area = decode(&WORLD, cell);
    let [north, south, east, west, ne, nw, se, sw] = n.map(Some);
    let mut out = [Some(cell), north, south, east, west, ne, nw, se, sw];
    if step >= 2 {
        let mut drop = |idx: &[usize]| idx.iter().for_each(|&i| out[i] = None);
        if area.lat.0 < min_lat {
            drop(&[2, 7, 8]);
        }
        if area.lat.1 > max_lat {
            drop(&[1, 5, 6]);
        }
        if area.lon.0 < min_lon {
            drop(&[4, 8, 6]);
        }
        if area.lon.1 > max_lon {
            drop(&[3, 7, 5]);
        }
    }
    out
}

/// North, south, east, west, north-east, north-west, south-east, south-west of `c`.
fn neighbours(c: Cell) -> [Cell; 8] {
    [
        move_y(c, 1),
        move_y(c, -1),
        move_x(c, 1),
        move_x(c, -1),
        move_y(move_x(c, 1), 1),
        move_y(move_x(c, -1), 1),
        move_y(move_x(c, 1), -1),
        move_y(move_x(c, -1), -1),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    // Figures below are redis-server 7.0's replies for the same input.
    const PALERMO: (f64, f64) = (13.361389, 38.115556);
    const CATANIA: (f64, f64) = (15.087269, 37.502669);

    #[test]
    fn scores_positions_and_hashes_match_redis() {
        let s = score_of(PALERMO.0, PALERMO.1);
        assert_eq!(s, 3_479_099_956_230_698.0);
        let (lon, lat) = position(s);
        assert_eq!(
            (
                rialto_resp::format_human_double(lon),
                rialto_resp::format_human_double(lat)
            ),
            (
                "13.36138933897018433".to_string(),
                "38.11555639549629859".to_string()
            )
        );
        assert_eq!(&geohash(s), b"sqc8b49rny0");
        assert_eq!(&geohash(score_of(CATANIA.0, CATANIA.1)), b"sqdtr74hyu0");
    }

    #[test]
    fn distances_are_formatted_as_redis() {
        let (a, b) = (
            position(score_of(PALERMO.0, PALERMO.1)),
            position(score_of(CATANIA.0, CATANIA.1)),
        );
        let d = distance(a.0, a.1, b.0, b.1);
        assert_eq!(format_distance(d), "166274.1516");
        assert_eq!(format_distance(d / 1000.0), "166.2742");
        assert_eq!(format_distance(0.0), "0.0000");
        assert_eq!(format_distance(0.00004), "0.0000");
        assert_eq!(format_distance(0.00006), "0.0001");
    }

    #[test]
    fn interleaving_round_trips() {
        for (x, y) in [
            (0u32, 0u32),
            (1, 0),
            (0, 1),
            (0x3ff_ffff, 0x155_5555),
            (u32::MAX, 7),
        ] {
            assert_eq!(deinterleave(interleave(x, y)), (x, y));
        }
    }

    #[test]
    fn neighbours_wrap_around_the_antimeridian() {
        let c = encode(&WORLD, 179.9, 0.0, 4);
        let east = decode(&WORLD, move_x(c, 1));
        assert_eq!(east.lon.0, -180.0);
        let west = decode(&WORLD, move_x(encode(&WORLD, -179.9, 0.0, 4), -1));
        assert_eq!(west.lon.1, 180.0);
    }

    #[test]
    fn steps_shrink_with_the_radius_and_toward_the_poles() {
        assert_eq!(steps_for(0.0, 0.0), 26);
        assert!(steps_for(100.0, 0.0) > steps_for(100_000.0, 0.0));
        assert_eq!(steps_for(100.0, 70.0), steps_for(100.0, 0.0) - 1);
        assert_eq!(steps_for(100.0, -85.0), steps_for(100.0, 0.0) - 2);
        assert_eq!(steps_for(1e9, 0.0), 1);
    }
}
