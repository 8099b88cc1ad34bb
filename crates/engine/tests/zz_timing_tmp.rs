use rialto_engine::conformance::{checks, run_check};
use rialto_engine::model::ModelFactory;
#[test]
fn timing() {
    let f = ModelFactory::new();
    for c in checks::<ModelFactory>() {
        let t = std::time::Instant::now();
        run_check(&f, c).unwrap();
        eprintln!("{:40} {:?}", c.name, t.elapsed());
    }
}
