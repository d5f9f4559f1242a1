package dev.sluice.registry;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import jakarta.enterprise.context.ApplicationScoped;
import jakarta.enterprise.inject.Produces;

/**
 * Apicurio builds this list at build time with a Quarkus extension
 * (apicurio-registry-config-index-deployment) that Maven Central does not serve here.
 * Sluice's tests use no dynamic (runtime-editable) registry settings, so the list is empty.
 */
@ApplicationScoped
public class DynamicConfigPropertyListProducer {
  @Produces
  @ApplicationScoped
  public DynamicConfigPropertyList dynamicConfigPropertyList() {
    return new DynamicConfigPropertyList(new java.util.ArrayList<>());
  }
}
