//! Unit tests of `confine.rs`.

use super::*;

#[test]
fn go_builds_with_a_cache_in_the_private_temp_dir_unless_its_own_is_writable() {
    let root = tempfile::tempdir().unwrap();
    let confined =
        Confinement::new(PathBuf::from("/x"), root.path(), &[], false, None, None).unwrap();
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| std::ffi::OsString::from(v))
        }
    };
    let expected = confined.tmp().join("go-build");
    assert_eq!(
        confined.go_cache(env(&[("HOME", "/home/u")])),
        Some(expected.clone())
    );
    assert_eq!(confined.go_cache(env(&[])), Some(expected));
    // The user's own setting stands.
    assert_eq!(
        confined.go_cache(env(&[("GOCACHE", "/c"), ("HOME", "/home/u")])),
        None
    );
    // A cache dir the rules let commands write is used as it is.
    let cache = tempfile::tempdir().unwrap();
    let writable = Confinement::new(
        PathBuf::from("/x"),
        root.path(),
        &[cache.path().to_path_buf()],
        false,
        None,
        None,
    )
    .unwrap();
    let home: &'static str = Box::leak(cache.path().display().to_string().into_boxed_str());
    let pairs: &'static [(&'static str, &'static str)] =
        Box::leak(vec![("XDG_CACHE_HOME", home)].into_boxed_slice());
    assert_eq!(writable.go_cache(env(pairs)), None);
}

#[test]
fn the_private_temp_dir_is_made_once_and_never_taken_from_someone_else() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let ours = dir.path().join("offcode-1-ours");
    super::tmp::make_private_dir(&ours).unwrap();
    assert_eq!(
        std::fs::metadata(&ours).unwrap().permissions().mode() & 0o777,
        0o700
    );
    // Made already by this session: used.
    super::tmp::make_private_dir(&ours).unwrap();
    // Anyone's open dir, or a link to one, at that name: not used.
    let open = dir.path().join("offcode-1-open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert!(super::tmp::make_private_dir(&open).is_err());
    let link = dir.path().join("offcode-1-link");
    std::os::unix::fs::symlink(&ours, &link).unwrap();
    assert!(super::tmp::make_private_dir(&link).is_err());
}

#[test]
fn temp_dirs_of_sessions_long_gone_are_swept_and_nothing_else() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_hours(2);
    // A PID above any kernel's pid_max is never a running process.
    let dead = 1u64 << 23;
    let make = |name: &str, mode: u32, old: bool| {
        let path = dir.path().join(name);
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("left.txt"), "x").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        if old {
            let handle = std::fs::File::open(&path).unwrap();
            handle
                .set_times(std::fs::FileTimes::new().set_modified(hour_ago))
                .unwrap();
        }
        path
    };
    let ns = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata("/proc/self/ns/pid").unwrap());
    let stale = make(
        &format!("offcode-{dead}-{ns}-00000000000000ab"),
        0o700,
        true,
    );
    let fresh = make(
        &format!("offcode-{dead}-{ns}-00000000000000cd"),
        0o700,
        false,
    );
    let alive = make(
        &format!("offcode-{}-{ns}-00000000000000ef", std::process::id()),
        0o700,
        true,
    );
    let open = make(
        &format!("offcode-{dead}-{ns}-0000000000000011"),
        0o755,
        true,
    );
    let other = make("offcode-notes", 0o700, true);
    // Another PID namespace's (a container sharing /tmp): its PIDs are not
    // this one's, so it may be in use; nor one whose namespace is unknown,
    // or of the form before namespaces were named.
    let elsewhere = make(
        &format!("offcode-{dead}-{}-00000000000000ab", ns + 1),
        0o700,
        true,
    );
    let unknown = make(&format!("offcode-{dead}-0-00000000000000ab"), 0o700, true);
    let before = make(&format!("offcode-{dead}-00000000000000ab"), 0o700, true);
    // Names offcode never makes: upper-case hex, a PID 0 or with a zero
    // in front.
    let upper = make(
        &format!("offcode-{dead}-{ns}-00000000000000AB"),
        0o700,
        true,
    );
    let zero = make(&format!("offcode-0-{ns}-00000000000000ab"), 0o700, true);
    let padded = make(
        &format!("offcode-0{dead}-{ns}-00000000000000ab"),
        0o700,
        true,
    );
    let own = make(
        &format!("offcode-{dead}-{ns}-0000000000000022"),
        0o700,
        true,
    );
    let target = make("target", 0o700, true);
    let link = dir
        .path()
        .join(format!("offcode-{dead}-{ns}-0000000000000033"));
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert_eq!(super::tmp::sweep_stale(dir.path(), &own), 1);
    assert!(!stale.exists());
    for kept in [
        &fresh, &alive, &open, &other, &own, &target, &upper, &zero, &padded, &elsewhere, &unknown,
        &before,
    ] {
        assert!(kept.join("left.txt").exists(), "{}", kept.display());
    }
    assert!(link.symlink_metadata().is_ok());
}
