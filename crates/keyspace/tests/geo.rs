//! Geospatial searches against a brute-force model: random positions (clustered, and spread
//! over the world, poles and antimeridian included) in packed and large sorted sets, random
//! circles and boxes around positions and members, in every unit. What a search finds must be
//! exactly the positions the model puts within the shape, apart from those within a relative
//! hair of its edge (the cells' centres and the shape's edge are both rounded); counts,
//! orders and ANY must select as Redis does; GEOSEARCHSTORE's op must store what the search
//! replies.

mod common;

use bytes::Bytes;
use common::options;
use proptest::prelude::*;
use rialto_io::MemFs;
use rialto_keyspace::geo::{self, Area, Form, Order, Shape};
use rialto_keyspace::{GeoError, Keyspace, Op, OpKind, Score, Value, ZAddFlags, ZSet, ZSetOp};

fn open(fs: &MemFs, packed_max: usize) -> Keyspace {
    let ks = Keyspace::open(std::path::Path::new("/ks/db"), options(fs)).unwrap();
    ks.encodings().set_zset_max_entries(packed_max);
    ks
}

fn add(ks: &Keyspace, key: &str, points: &[(f64, f64)]) {
    let items = points
        .iter()
        .enumerate()
        .map(|(i, &(lon, lat))| (Score(geo::score_of(lon, lat)), member(i)))
        .collect();
    let op = OpKind::ZSet(ZSetOp::Add {
        key: Bytes::from(key.to_string()),
        flags: ZAddFlags::default(),
        items,
    });
    ks.execute(Op::new(0, ks.now_ms(), op)).unwrap();
}

fn member(i: usize) -> Bytes {
    Bytes::from(format!("m{i}"))
}

fn point() -> impl Strategy<Value = (f64, f64)> {
    prop_oneof![
        (12.0f64..13.0, 41.0f64..42.0),
        (-180.0f64..=180.0, geo::LAT_MIN..=geo::LAT_MAX),
        (179.0f64..=180.0, 84.0f64..=geo::LAT_MAX),
        (-180.0f64..-179.0, -10.0f64..10.0),
    ]
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        (0.0f64..300_000.0).prop_map(Shape::Radius),
        (0.0f64..3_000.0).prop_map(Shape::Radius),
        (0.0f64..600_000.0, 0.0f64..600_000.0).prop_map(|(w, h)| Shape::Box(w, h)),
    ]
}

fn unit() -> impl Strategy<Value = f64> {
    prop::sample::select(vec![1.0, 1000.0, 0.3048, 1609.34])
}

/// Where the model puts a stored position relative to `a`: inside, outside, or too near the
/// edge to say.
fn model(a: &Area, score: f64) -> Option<bool> {
    let (lon, lat) = geo::position(score);
    let (inside, margin) = match a.shape {
        Shape::Radius(r) => {
            let d = geo::distance(a.lon, a.lat, lon, lat);
            let r = r * a.unit;
            (d <= r, (d - r).abs() <= 1e-9 * r.max(1.0))
        }
        Shape::Box(w, h) => {
            let dy = geo::distance(lon, lat, lon, a.lat);
            let dx = geo::distance(lon, lat, a.lon, lat);
            let (hw, hh) = (w * a.unit / 2.0, h * a.unit / 2.0);
            let near =
                (dx - hw).abs() <= 1e-9 * hw.max(1.0) || (dy - hh).abs() <= 1e-9 * hh.max(1.0);
            (dx <= hw && dy <= hh, near)
        }
    };
    (!margin).then_some(inside)
}

/// How far north or south of its centre a search reaches, in degrees.
fn reach_deg(a: &Area) -> f64 {
    let half = match a.shape {
        Shape::Radius(r) => r,
        Shape::Box(_, h) => h / 2.0,
    };
    (half * a.unit / 6_372_797.560_856).to_degrees()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn searches_find_exactly_what_lies_within_the_shape(
        points in prop::collection::vec(point(), 1..300),
        searches in prop::collection::vec(
            (point(), shape(), unit(), any::<bool>(), prop::option::of(1u64..20), any::<bool>()),
            1..12,
        ),
        large in any::<bool>(),
    ) {
        let fs = MemFs::new();
        let ks = open(&fs, if large { 8 } else { 1024 });
        add(&ks, "g", &points);
        for ((lon, lat), shape, unit, desc, count, any) in searches {
            let area = Area { lon, lat, shape, unit };
            let order = if desc { Order::Desc } else { Order::Asc };
            let (all, limited) = ks.read(0, ks.now_ms(), |k| {
                let z = ZSet::load(k, b"g").unwrap().unwrap();
                prop_assert_eq!(z.is_large(), large && points.len() > 8);
                let all = geo::search(k, &z, &area, None, false, Order::Unsorted).unwrap();
                let limited = geo::search(k, &z, &area, count, any, order).unwrap();
                Ok((all, limited))
            })?;
            // Exact up to the edge; complete away from the poles. Near them Redis's estimate
            // of the cells a search needs falls short (a search there from redis-server misses
            // the same members), and so, to reply as it does, does this one.
            let found: std::collections::HashSet<&Bytes> = all.iter().map(|f| &f.member).collect();
            prop_assert_eq!(found.len(), all.len(), "a member found twice");
            let complete = reach_deg(&area) + lat.abs() < 60.0;
            for (i, &(plon, plat)) in points.iter().enumerate() {
                match model(&area, geo::score_of(plon, plat)) {
                    Some(true) if complete => prop_assert!(found.contains(&member(i)), "member {} missed", i),
                    Some(false) => prop_assert!(!found.contains(&member(i)), "member {} outside", i),
                    _ => {}
                }
            }
            // A count keeps the first in the order asked (the farthest with DESC, as Redis);
            // with ANY, the first found, then ordered.
            let n = count.unwrap_or(u64::MAX) as usize;
            let mut want: Vec<_> = if any { all.iter().take(n).cloned().collect() } else { all.clone() };
            want.sort_by(|a, b| a.dist.total_cmp(&b.dist));
            if desc {
                want.reverse();
            }
            want.truncate(n);
            let dists = |v: &[geo::Found]| v.iter().map(|f| f.dist).collect::<Vec<_>>();
            prop_assert_eq!(dists(&limited), dists(&want));
        }
    }
}

fn b(s: &str) -> Bytes {
    Bytes::from(s.to_string())
}

fn request(words: &str) -> Vec<Bytes> {
    words.split(' ').map(b).collect()
}

#[test]
fn a_stored_search_holds_what_the_search_replies() {
    let fs = MemFs::new();
    let ks = open(&fs, 4);
    let points: Vec<(f64, f64)> = (0..50)
        .map(|i| (12.0 + f64::from(i) * 0.01, 41.0 + f64::from(i % 7) * 0.01))
        .collect();
    add(&ks, "g", &points);
    let search = "GEOSEARCH g FROMMEMBER m10 BYRADIUS 10 km COUNT 12 DESC";
    let found = ks.read(0, ks.now_ms(), |k| {
        let g = ZSet::load(k, b"g").unwrap().unwrap();
        let req = geo::parse(k, Some(&g), &request(search), Form::Search).unwrap();
        geo::run(k, &g, &req).unwrap()
    });
    assert_eq!(found.len(), 12);
    for dist in [false, true] {
        let mut args = request("GEOSEARCHSTORE d g FROMMEMBER m10 BYRADIUS 10 km COUNT 12 DESC");
        if dist {
            args.push(b("STOREDIST"));
        }
        let op = OpKind::ZSet(ZSetOp::GeoStore {
            form: Form::SearchStore,
            args,
        });
        assert_eq!(
            ks.execute(Op::new(0, ks.now_ms(), op)).unwrap(),
            Value::Int(12)
        );
        let stored = ks.read(0, ks.now_ms(), |k| {
            ZSet::load(k, b"d").unwrap().unwrap().entries(k).unwrap()
        });
        let mut want: Vec<(Bytes, f64)> = found
            .iter()
            .map(|f| (f.member.clone(), if dist { f.dist } else { f.score }))
            .collect();
        want.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
        assert_eq!(stored, want);
    }
    // Around a member the set lacks: refused, the destination untouched.
    let op = OpKind::ZSet(ZSetOp::GeoStore {
        form: Form::ByMember { ro: false },
        args: request("GEORADIUSBYMEMBER g nobody 5 km STORE d"),
    });
    assert!(matches!(
        ks.execute(Op::new(0, ks.now_ms(), op)),
        Err(rialto_keyspace::Error::Geo(GeoError::MemberMissing))
    ));
    // From a missing set: the destination deleted, 0 stored, whatever the radius says (Redis
    // does not read it then).
    let op = OpKind::ZSet(ZSetOp::GeoStore {
        form: Form::ByMember { ro: false },
        args: request("GEORADIUSBYMEMBER nothing nobody notanumber km STORE d"),
    });
    assert_eq!(
        ks.execute(Op::new(0, ks.now_ms(), op)).unwrap(),
        Value::Int(0)
    );
    let left = ks.read(0, ks.now_ms(), |k| ZSet::load(k, b"d").unwrap().is_none());
    assert!(left);
}
