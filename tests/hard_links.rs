//! A file outside the workspace never changes through a hard link inside
//! it by the file tools: `write`, `edit` and `patch` replace the name with
//! a new file (a new inode) and never write in place.

use std::os::unix::fs::MetadataExt;

use crate::support::{Workspace, run};

#[test]
fn the_file_tools_replace_a_hard_linked_file_and_leave_the_outside_name_alone() {
    let ws = Workspace::new();
    let outside = ws.home.join("dotfile");
    std::fs::write(&outside, "outside\n").unwrap();
    let inode = std::fs::metadata(&outside).unwrap().ino();
    let calls = [
        (
            "write",
            r#"{"path": "w.txt", "content": "written\n"}"#,
            "w.txt",
        ),
        (
            "edit",
            r#"{"path": "e.txt", "old_string": "outside", "new_string": "edited"}"#,
            "e.txt",
        ),
        (
            "patch",
            r#"{"patch": "--- a/p.txt\n+++ b/p.txt\n@@ -1 +1 @@\n-outside\n+patched\n"}"#,
            "p.txt",
        ),
    ];
    for (tool, arguments, name) in calls {
        let inside = ws.root.join(name);
        std::fs::hard_link(&outside, &inside).unwrap();
        let done = run(ws.offcode("http://127.0.0.1:9/v1", &["tool", "--yes", tool, arguments]));
        assert_eq!(done.code, 0, "{tool}: {}{}", done.stdout, done.stderr);
        assert_ne!(
            std::fs::read_to_string(&inside).unwrap(),
            "outside\n",
            "{tool} changed nothing"
        );
        assert_ne!(std::fs::metadata(&inside).unwrap().ino(), inode, "{tool}");
        assert_eq!(
            std::fs::read_to_string(&outside).unwrap(),
            "outside\n",
            "{tool} wrote through the link"
        );
        assert_eq!(std::fs::metadata(&outside).unwrap().ino(), inode);
    }
}
