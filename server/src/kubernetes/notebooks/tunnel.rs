//! Notebook servers reached through the API server's port-forward
//! (`pods/portforward`, the way `kubectl port-forward` goes), so a console
//! outside the cluster needs no route to pod IPs: only the API server,
//! with `create` on `pods/portforward` in the notebooks' namespaces.
//! Each connection is one forwarded stream; HTTP and WebSockets go over it
//! as over TCP.

use std::io;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Pod;
use kube::{Api, Client};

use crate::backend::lab_client::{Stream, Tunnel};

/// Opens streams to `<pod>.<namespace>:<port>` addresses.
pub struct PodTunnel {
    /// The console's client of the API server.
    pub client: Client,
}

/// The address of `port` of `pod` in `namespace`, as [`PodTunnel`] reads it.
pub fn address(pod: &str, namespace: &str, port: u16) -> String {
    format!("http://{pod}.{namespace}:{port}")
}

#[async_trait]
impl Tunnel for PodTunnel {
    async fn open(&self, host: &str, port: u16) -> io::Result<Box<dyn Stream>> {
        let (pod, namespace) = host
            .split_once('.')
            .ok_or_else(|| io::Error::other(format!("{host} names no pod")))?;
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        let mut forwarder = pods
            .portforward(pod, &[port])
            .await
            .map_err(|e| io::Error::other(format!("port-forward to {pod}: {e}")))?;
        let stream = forwarder
            .take_stream(port)
            .ok_or_else(|| io::Error::other("the port-forward gave no stream"))?;
        // The forwarder's task lives on with the stream and ends with it.
        drop(forwarder);
        Ok(Box::new(stream))
    }
}
