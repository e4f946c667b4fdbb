//! The DOM sink that tells a parse to stop: `html2text`'s own DOM, with the depth of every
//! element the tree builder inserts measured by walking its ancestors.
//!
//! Nothing is cached: the adoption agency algorithm reparents subtrees and appends to elements
//! not yet attached, so a depth stored at insertion would be wrong for what moves later. The
//! tree builder's stack of open elements is a chain of the current node's ancestors (one
//! foster-parented element aside), so an insertion's depth bounds the stack the builder scans.
//! A template's contents are a detached fragment: the walk goes on from the template itself, so
//! a `<template>` cannot restart the count.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use html2text::{Handle, RcDom};
use html5ever::tendril::StrTendril;
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{Attribute, QualName};

/// `RcDom` plus the depth check; every tree operation is `RcDom`'s own.
pub(super) struct DepthGuardedDom {
    dom: RcDom,
    max_depth: usize,
    too_deep: Cell<bool>,
    /// Template contents (by address) to their template: the contents hold no parent link.
    template_of: RefCell<HashMap<usize, Handle>>,
}

impl std::fmt::Debug for DepthGuardedDom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DepthGuardedDom")
            .field("max_depth", &self.max_depth)
            .field("too_deep", &self.too_deep.get())
            .finish_non_exhaustive()
    }
}

impl DepthGuardedDom {
    pub(super) fn new(max_depth: usize) -> Self {
        Self {
            dom: RcDom::default(),
            max_depth,
            too_deep: Cell::new(false),
            template_of: RefCell::new(HashMap::new()),
        }
    }

    /// Whether an element has landed deeper than the bound.
    pub(super) fn too_deep(&self) -> bool {
        self.too_deep.get()
    }

    /// The DOM, unless the document turned out too deep to lay out.
    pub(super) fn into_dom(self) -> Option<RcDom> {
        (!self.too_deep.get()).then_some(self.dom)
    }

    /// How many ancestors `node` has, counted up to one past the bound (the walk stops there,
    /// so each insertion costs at most the bound).
    pub(super) fn depth(&self, node: &Handle) -> usize {
        let mut depth = 0;
        let mut current = node.clone();
        while depth <= self.max_depth {
            let up = current
                .get_parent()
                .or_else(|| self.template_of.borrow().get(&address(&current)).cloned());
            match up {
                Some(parent) => {
                    depth += 1;
                    current = parent;
                }
                None => break,
            }
        }
        depth
    }

    fn measure(&self, inserted: Option<Handle>) {
        if let Some(node) = inserted
            && self.depth(&node) > self.max_depth
        {
            self.too_deep.set(true);
        }
    }
}

fn address(node: &Handle) -> usize {
    Rc::as_ptr(node).addr()
}

/// The node an insertion places (a text insertion never deepens the stack of open elements).
fn placed(child: &NodeOrText<Handle>) -> Option<Handle> {
    match child {
        NodeOrText::AppendNode(node) => Some(node.clone()),
        NodeOrText::AppendText(_) => None,
    }
}

impl TreeSink for DepthGuardedDom {
    type Handle = Handle;
    type Output = Self;
    type ElemName<'a> = <RcDom as TreeSink>::ElemName<'a>;

    fn finish(self) -> Self {
        self
    }

    fn parse_error(&self, msg: Cow<'static, str>) {
        self.dom.parse_error(msg);
    }

    fn get_document(&self) -> Handle {
        self.dom.get_document()
    }

    fn elem_name<'a>(&'a self, target: &'a Handle) -> Self::ElemName<'a> {
        self.dom.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> Handle {
        self.dom.create_element(name, attrs, flags)
    }

    fn create_comment(&self, text: StrTendril) -> Handle {
        self.dom.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> Handle {
        self.dom.create_pi(target, data)
    }

    fn append(&self, parent: &Handle, child: NodeOrText<Handle>) {
        let inserted = placed(&child);
        self.dom.append(parent, child);
        self.measure(inserted);
    }

    fn append_based_on_parent_node(
        &self,
        element: &Handle,
        prev_element: &Handle,
        child: NodeOrText<Handle>,
    ) {
        let inserted = placed(&child);
        self.dom
            .append_based_on_parent_node(element, prev_element, child);
        self.measure(inserted);
    }

    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.dom
            .append_doctype_to_document(name, public_id, system_id);
    }

    fn get_template_contents(&self, target: &Handle) -> Handle {
        let contents = self.dom.get_template_contents(target);
        self.template_of
            .borrow_mut()
            .insert(address(&contents), target.clone());
        contents
    }

    fn same_node(&self, x: &Handle, y: &Handle) -> bool {
        self.dom.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.dom.set_quirks_mode(mode);
    }

    fn append_before_sibling(&self, sibling: &Handle, new_node: NodeOrText<Handle>) {
        let inserted = placed(&new_node);
        self.dom.append_before_sibling(sibling, new_node);
        self.measure(inserted);
    }

    fn add_attrs_if_missing(&self, target: &Handle, attrs: Vec<Attribute>) {
        self.dom.add_attrs_if_missing(target, attrs);
    }

    fn remove_from_parent(&self, target: &Handle) {
        self.dom.remove_from_parent(target);
    }

    fn reparent_children(&self, node: &Handle, new_parent: &Handle) {
        self.dom.reparent_children(node, new_parent);
    }

    fn is_mathml_annotation_xml_integration_point(&self, handle: &Handle) -> bool {
        self.dom.is_mathml_annotation_xml_integration_point(handle)
    }
}
