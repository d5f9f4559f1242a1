package dev.sluice.registry;

import io.vertx.ext.web.Router;
import jakarta.enterprise.event.Observes;

/**
 * Serves Apicurio's Confluent-compatible API (normally under /apis/ccompat/v7) at the root too,
 * as Confluent Schema Registry and Karapace do, so clients and tests use one URL for any
 * Confluent-compatible registry: http://127.0.0.1:18081/subjects/... .
 */
public class ConfluentPathAlias {
  private static final String PREFIX = "/apis/ccompat/v7";

  void install(@Observes Router router) {
    router
        .routeWithRegex("^/(subjects|schemas|config|compatibility|mode|contexts)(/.*)?$")
        .order(-100)
        .handler(rc -> {
          String query = rc.request().query();
          rc.reroute(PREFIX + rc.request().path() + (query == null ? "" : "?" + query));
        });
  }
}
