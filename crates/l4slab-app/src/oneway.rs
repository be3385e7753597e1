//! `bulk` and `file`: one-ended apps on the sending side of the flow's
//! connection ([`l4slab_tcp::Bulk`], [`l4slab_tcp::File`] through
//! [`OneWay`]); their configs as a scenario sets them.

use serde::Serialize;

use l4slab_core::param::{Kind, Param, ParamValue};

use crate::registry::{AppKind, BuildContext};
use crate::{Bulk, File, FlowApp, OneWay};

/// `app = "bulk"`: no parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BulkConfig;

l4slab_core::param_fields!(BulkConfig {});

impl AppKind for BulkConfig {
    const NAME: &'static str = "bulk";
    const WHAT: &'static str = "send forever";
    const EXAMPLE: &'static str = r#"app = "bulk""#;
    const PARAMS: &'static [Param] = &[];

    fn build(&self, cx: &BuildContext<'_>) -> Box<dyn FlowApp> {
        Box::new(OneWay::new(cx.sender, Bulk::new()))
    }
}

/// `size`: the file's bytes (required).
pub const SIZE: Param = Param::new(
    "size",
    Kind::Size {
        min: 1,
        max: u64::MAX,
    },
    ParamValue::Unset {
        example: r#""10MB""#,
    },
    "required",
    "bytes to send, then close",
);

/// `app = { kind = "file", size = "10MB" }`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FileConfig {
    /// [`SIZE`] (0 until the scenario sets it: it is required).
    pub size: u64,
}

l4slab_core::param_fields!(FileConfig { size = SIZE });

impl AppKind for FileConfig {
    const NAME: &'static str = "file";
    const WHAT: &'static str = "send a file, then close";
    const EXAMPLE: &'static str = r#"app = { kind = "file", size = "10MB" }"#;
    const PARAMS: &'static [Param] = &[SIZE];

    fn build(&self, cx: &BuildContext<'_>) -> Box<dyn FlowApp> {
        Box::new(OneWay::new(cx.sender, File::new(self.size)))
    }
}
